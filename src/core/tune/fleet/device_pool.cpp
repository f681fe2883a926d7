#include "core/tune/fleet/device_pool.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace tiletune {

namespace {

using clock_type = std::chrono::steady_clock;

// What runners post from their threads; the dealer alone reads it. Shared, so a
// runner abandoned as hung may still post after run() has returned.
struct mailbox {
  struct letter {
    std::size_t slot;
    std::uint64_t token;             // the attempt it belongs to: a stale one is ignored
    std::optional<attempt_end> end;  // none: a beat
  };
  std::mutex m;
  std::condition_variable cv;
  std::deque<letter> letters;
  void post(letter l) {
    {
      std::lock_guard lock(m);
      letters.push_back(std::move(l));
    }
    cv.notify_one();
  }
};

struct slot_state {
  bool busy = false;
  std::size_t problem = 0;
  std::uint64_t token = 0;
  clock_type::time_point last_beat;
};
// One run(): the problems' outcomes, the devices' slots and the letters posted to the dealer.
class dealer {
 public:
  dealer(std::vector<pool_device>& devices, const pool_settings& settings,
         std::vector<pool_device_state>& states, std::size_t count, const pool_events& events)
      : devices_(devices), settings_(settings), states_(states), events_(events),
        outcomes_(count), attempts_(count, 0), slots_(devices.size()) {
    for (std::size_t i = 0; i < count; ++i) pending_.push_back(i);
  }

  std::vector<problem_outcome> run() {
    while (decided_ < outcomes_.size()) {
      deal();
      if (!any_busy()) {
        settle_pending();
        break;
      }
      read(wait());
      retire_silent();
    }
    return std::move(outcomes_);
  }

 private:
  void decide(std::size_t p, problem_outcome::state what, std::string why) {
    outcomes_[p].what = what;
    outcomes_[p].why = std::move(why);
    ++decided_;
    if (what != problem_outcome::state::not_run && events_.finished) events_.finished(p, outcomes_[p]);
  }

  bool healthy() const {
    for (const auto& s : states_)
      if (!s.retired) return true;
    return false;
  }

  bool any_busy() const {
    for (const auto& sl : slots_)
      if (sl.busy) return true;
    return false;
  }

  // A device faulted or hung on its problem: retire it, and deal the problem again or give up on it.
  void fault(std::size_t slot, const std::string& why) {
    const std::size_t p = slots_[slot].problem;
    slots_[slot].busy = false;
    slots_[slot].token = 0;
    states_[slot].retired = true;
    states_[slot].why = why;
    if (events_.retired) events_.retired(devices_[slot].index, why);
    outcomes_[p].faults.push_back({devices_[slot].index, why});
    if (attempts_[p] < settings_.max_attempts) {
      pending_.push_front(p);
      return;
    }
    std::vector<int> on;
    for (const auto& f : outcomes_[p].faults) on.push_back(f.device);
    decide(p, problem_outcome::state::failed,
           fmt::format("faulted on {} device(s) ({}), the most a problem is tried", on.size(),
                       fmt::join(on, ", ")));
  }

  // Deal to every idle healthy device, in the devices' order.
  void deal() {
    for (std::size_t s = 0; s < slots_.size() && !pending_.empty(); ++s) {
      if (slots_[s].busy || states_[s].retired) continue;
      const std::size_t p = pending_.front();
      if (attempts_[p] == 0 && dealing_ && !settings_.keep_dealing()) dealing_ = false;
      if (attempts_[p] == 0 && !dealing_) break;
      pending_.pop_front();
      ++attempts_[p];
      slots_[s] = {true, p, next_token_++, clock_type::now()};
      if (events_.started) events_.started(devices_[s].index, p, attempts_[p]);
      const std::uint64_t token = slots_[s].token;
      devices_[s].runner->start(
          p, [box = box_, s, token] { box->post({s, token, std::nullopt}); },
          [box = box_, s, token](attempt_end end) { box->post({s, token, std::move(end)}); });
    }
  }

  // Nothing runs and nothing more can start: what is left is failed (no device) or not run (no budget).
  void settle_pending() {
    const bool any = healthy();
    while (!pending_.empty()) {
      const std::size_t p = pending_.front();
      pending_.pop_front();
      if (any && attempts_[p] == 0)
        decide(p, problem_outcome::state::not_run,
               "no new problem was started (the budget was spent)");
      else
        decide(p, problem_outcome::state::failed,
               "no healthy device was left to run it (every device was retired)");
    }
  }

  clock_type::time_point silence_ends(const slot_state& sl) const {
    return sl.last_beat + std::chrono::duration_cast<clock_type::duration>(
                              std::chrono::duration<double>(settings_.stall_s(sl.problem)));
  }

  // Waits for a letter, or for the first busy device's silence to run out.
  std::deque<mailbox::letter> wait() {
    std::optional<clock_type::time_point> deadline;
    for (const auto& sl : slots_)
      if (sl.busy && (!deadline || silence_ends(sl) < *deadline)) deadline = silence_ends(sl);
    std::deque<mailbox::letter> letters;
    std::unique_lock lock(box_->m);
    box_->cv.wait_until(lock, *deadline, [&] { return !box_->letters.empty(); });
    letters.swap(box_->letters);
    return letters;
  }

  void read(std::deque<mailbox::letter> letters) {
    for (auto& l : letters) {
      slot_state& sl = slots_[l.slot];
      if (!sl.busy || sl.token != l.token) continue;  // from an abandoned attempt
      if (!l.end) {
        sl.last_beat = clock_type::now();
      } else if (!l.end->ok) {
        fault(l.slot, l.end->why.empty() ? "the device faulted" : l.end->why);
      } else {
        const std::size_t p = sl.problem;
        sl.busy = false;
        sl.token = 0;
        ++states_[l.slot].answered;
        outcomes_[p].device = devices_[l.slot].index;
        outcomes_[p].result = std::move(l.end->result);
        decide(p, problem_outcome::state::done, "");
      }
    }
  }

  void retire_silent() {
    const auto now = clock_type::now();
    for (std::size_t s = 0; s < slots_.size(); ++s) {
      if (!slots_[s].busy) continue;
      const double stall_s = settings_.stall_s(slots_[s].problem);
      if (std::chrono::duration<double>(now - slots_[s].last_beat).count() < stall_s) continue;
      devices_[s].runner->abandon();
      fault(s, fmt::format("hung: no progress in {:.1f} s (the limit for this problem)", stall_s));
    }
  }

  std::vector<pool_device>& devices_;
  const pool_settings& settings_;
  std::vector<pool_device_state>& states_;
  const pool_events& events_;
  std::vector<problem_outcome> outcomes_;
  std::vector<int> attempts_;
  std::size_t decided_ = 0;
  std::deque<std::size_t> pending_;
  std::vector<slot_state> slots_;
  std::shared_ptr<mailbox> box_ = std::make_shared<mailbox>();
  std::uint64_t next_token_ = 1;
  bool dealing_ = true;
};

}  // namespace

device_pool::device_pool(std::vector<pool_device> devices, pool_settings settings)
    : devices_(std::move(devices)), settings_(std::move(settings)) {
  if (devices_.empty()) throw std::invalid_argument("a device pool needs at least one device");
  if (settings_.max_attempts < 1) settings_.max_attempts = 1;
  for (const auto& d : devices_) states_.push_back({d.index, false, {}, 0});
}

std::vector<problem_outcome> device_pool::run(std::size_t count, const pool_events& events) {
  return dealer(devices_, settings_, states_, count, events).run();
}

}  // namespace tiletune
