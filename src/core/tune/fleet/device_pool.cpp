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

}  // namespace

device_pool::device_pool(std::vector<pool_device> devices, pool_settings settings)
    : devices_(std::move(devices)), settings_(std::move(settings)) {
  if (devices_.empty()) throw std::invalid_argument("a device pool needs at least one device");
  if (settings_.max_attempts < 1) settings_.max_attempts = 1;
  for (const auto& d : devices_) states_.push_back({d.index, false, {}, 0});
}

std::vector<problem_outcome> device_pool::run(std::size_t count, const pool_events& events) {
  std::vector<problem_outcome> outcomes(count);
  std::vector<int> attempts(count, 0);
  std::size_t decided_count = 0;
  std::deque<std::size_t> pending;
  for (std::size_t i = 0; i < count; ++i) pending.push_back(i);
  std::vector<slot_state> slots(devices_.size());
  auto box = std::make_shared<mailbox>();
  std::uint64_t next_token = 1;
  bool dealing = true;

  auto decide = [&](std::size_t p, problem_outcome::state what, std::string why) {
    outcomes[p].what = what;
    outcomes[p].why = std::move(why);
    ++decided_count;
    if (what != problem_outcome::state::not_run && events.finished) events.finished(p, outcomes[p]);
  };
  auto healthy = [&] {
    for (const auto& s : states_)
      if (!s.retired) return true;
    return false;
  };
  // A device faulted or hung on its problem: retire it, and deal the problem again or give up on
  // it.
  auto fault = [&](std::size_t slot, const std::string& why) {
    const std::size_t p = slots[slot].problem;
    slots[slot].busy = false;
    slots[slot].token = 0;
    states_[slot].retired = true;
    states_[slot].why = why;
    if (events.retired) events.retired(devices_[slot].index, why);
    outcomes[p].faults.push_back({devices_[slot].index, why});
    if (attempts[p] >= settings_.max_attempts) {
      std::vector<int> on;
      for (const auto& f : outcomes[p].faults) on.push_back(f.device);
      decide(p, problem_outcome::state::failed,
             fmt::format("faulted on {} device(s) ({}), the most a problem is tried", on.size(),
                         fmt::join(on, ", ")));
    } else {
      pending.push_front(p);
    }
  };

  while (decided_count < count) {
    // Deal to every idle healthy device, in the devices' order.
    for (std::size_t s = 0; s < slots.size() && !pending.empty(); ++s) {
      if (slots[s].busy || states_[s].retired) continue;
      const std::size_t p = pending.front();
      if (attempts[p] == 0 && dealing && !settings_.keep_dealing()) dealing = false;
      if (attempts[p] == 0 && !dealing) break;
      pending.pop_front();
      ++attempts[p];
      slots[s] = {true, p, next_token++, clock_type::now()};
      if (events.started) events.started(devices_[s].index, p, attempts[p]);
      const std::uint64_t token = slots[s].token;
      devices_[s].runner->start(
          p,
          [box, s, token] {
            box->post({s, token, std::nullopt});
          },
          [box, s, token](attempt_end end) {
            box->post({s, token, std::move(end)});
          });
    }
    bool busy = false;
    for (const auto& sl : slots) busy = busy || sl.busy;
    if (!busy) {
      // Nothing runs and nothing more can start: what is left is failed (no device) or not run (no
      // budget).
      const bool any = healthy();
      while (!pending.empty()) {
        const std::size_t p = pending.front();
        pending.pop_front();
        if (any && attempts[p] == 0)
          decide(p, problem_outcome::state::not_run,
                 "no new problem was started (the budget was spent)");
        else
          decide(p, problem_outcome::state::failed,
                 "no healthy device was left to run it (every device was retired)");
      }
      break;
    }

    // Wait for a letter, or for the first busy device's silence to run out.
    std::optional<clock_type::time_point> deadline;
    for (const auto& sl : slots)
      if (sl.busy) {
        const auto d =
            sl.last_beat + std::chrono::duration_cast<clock_type::duration>(
                               std::chrono::duration<double>(settings_.stall_s(sl.problem)));
        if (!deadline || d < *deadline) deadline = d;
      }
    std::deque<mailbox::letter> letters;
    {
      std::unique_lock lock(box->m);
      box->cv.wait_until(lock, *deadline, [&] { return !box->letters.empty(); });
      letters.swap(box->letters);
    }
    for (auto& l : letters) {
      slot_state& sl = slots[l.slot];
      if (!sl.busy || sl.token != l.token) continue;  // from an abandoned attempt
      if (!l.end) {
        sl.last_beat = clock_type::now();
        continue;
      }
      if (!l.end->ok) {
        fault(l.slot, l.end->why.empty() ? "the device faulted" : l.end->why);
        continue;
      }
      const std::size_t p = sl.problem;
      sl.busy = false;
      sl.token = 0;
      ++states_[l.slot].answered;
      outcomes[p].device = devices_[l.slot].index;
      outcomes[p].result = std::move(l.end->result);
      decide(p, problem_outcome::state::done, "");
    }
    const auto now = clock_type::now();
    for (std::size_t s = 0; s < slots.size(); ++s) {
      if (!slots[s].busy) continue;
      const double stall_s = settings_.stall_s(slots[s].problem);
      if (std::chrono::duration<double>(now - slots[s].last_beat).count() < stall_s) continue;
      devices_[s].runner->abandon();
      fault(s, fmt::format("hung: no progress in {:.1f} s (the limit for this problem)", stall_s));
    }
  }
  return outcomes;
}

}  // namespace tiletune
