#include "cuda/kernel_timer.hpp"

#include <cstdlib>
#include <map>
#include <mutex>

#include <cupti.h>
#include <fmt/format.h>

#include "cuda/cuda_check.hpp"

namespace tiletune {

namespace {

// ---- CUPTI -----------------------------------------------------------------

struct kernel_record {
  std::uint32_t correlation = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
};

std::mutex records_mutex;
std::vector<kernel_record> records;
std::map<std::uint32_t, std::uint64_t> sample_of_correlation;  // CUPTI correlation id -> our sample id

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  constexpr size_t bytes = 8 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, bytes));
  *size = *buffer ? bytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard lock(records_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      records.push_back({k->correlationId, k->start, k->end});
    } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      sample_of_correlation[e->correlationId] = e->externalId;
    }
  }
  std::free(buffer);
}

std::string cupti_message(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : fmt::format("CUPTI error {}", static_cast<int>(r));
}

// Each sample pushes an external correlation id; CUPTI ties every API call
// made under it, and so every kernel those calls launch, to that id.
class cupti_timer : public kernel_timer {
 public:
  std::string name() const override { return "cupti"; }
  void begin_sample(cudaStream_t) override {
    ++next_id_;
    cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, next_id_);
    pending_.push_back(next_id_);
  }
  void end_sample(cudaStream_t) override {
    std::uint64_t id = 0;
    cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, &id);
  }
  std::vector<double> collect(cudaStream_t stream) override {
    TT_CUDA(cudaStreamSynchronize(stream));
    cuptiActivityFlushAll(1);
    std::map<std::uint64_t, double> ns;
    {
      std::lock_guard lock(records_mutex);
      for (const auto& r : records) {
        const auto it = sample_of_correlation.find(r.correlation);
        if (it != sample_of_correlation.end()) ns[it->second] += static_cast<double>(r.end_ns - r.start_ns);
      }
      records.clear();
      sample_of_correlation.clear();
    }
    std::vector<double> out;
    for (std::uint64_t id : pending_)
      if (const auto it = ns.find(id); it != ns.end()) out.push_back(it->second / 1e3);
    if (out.size() != pending_.size())
      throw std::runtime_error(fmt::format("CUPTI returned kernel records for {} of {} samples", out.size(),
                                           pending_.size()));
    pending_.clear();
    return out;
  }

 private:
  std::uint64_t next_id_ = 0;
  std::vector<std::uint64_t> pending_;
};

// ---- CUDA events --------------------------------------------------------------

class event_timer : public kernel_timer {
 public:
  ~event_timer() override {
    for (auto& [a, b] : events_) {
      TT_CUDA_NOEXCEPT(cudaEventDestroy(a));
      TT_CUDA_NOEXCEPT(cudaEventDestroy(b));
    }
  }
  std::string name() const override { return "cuda_events"; }
  void begin_sample(cudaStream_t stream) override {
    if (used_ == events_.size()) {
      cudaEvent_t a, b;
      TT_CUDA(cudaEventCreate(&a));
      TT_CUDA(cudaEventCreate(&b));
      events_.push_back({a, b});
    }
    TT_CUDA(cudaEventRecord(events_[used_].first, stream));
  }
  void end_sample(cudaStream_t stream) override { TT_CUDA(cudaEventRecord(events_[used_++].second, stream)); }
  std::vector<double> collect(cudaStream_t stream) override {
    TT_CUDA(cudaStreamSynchronize(stream));
    std::vector<double> out;
    for (std::size_t i = 0; i < used_; ++i) {
      float ms = 0;
      TT_CUDA(cudaEventElapsedTime(&ms, events_[i].first, events_[i].second));
      out.push_back(ms * 1e3);
    }
    used_ = 0;
    return out;
  }

 private:
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> events_;
  std::size_t used_ = 0;
};

}  // namespace

std::unique_ptr<kernel_timer> make_cupti_timer(std::string& why) {
  CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  // External correlation records are made for API activity records; CUPTI's
  // own sample enables those too. Their records are read and dropped.
  if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  if (r == CUPTI_SUCCESS) r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
  if (r != CUPTI_SUCCESS) {
    why = cupti_message(r);
    return nullptr;
  }
  return std::make_unique<cupti_timer>();
}

std::unique_ptr<kernel_timer> make_event_timer() { return std::make_unique<event_timer>(); }

}  // namespace tiletune
