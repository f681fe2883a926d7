// fmt's compiled part, built once here. Debian's libfmt-dev ships fmt as a shared
// library or header-only; header-only (FMT_HEADER_ONLY) compiles fmt's formatting
// core into every file that includes fmt (about 5 s of -O3 per file), and the shared
// library is absent on the GPU machines the binary is carried to. So every file
// includes fmt in its compiled mode and this file defines fmt's out-of-line
// functions (format-inl.h) and the explicit instantiations the rest links against.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>,
                                 locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
