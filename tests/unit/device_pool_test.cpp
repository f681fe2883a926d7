// The dealer of `gemm --devices` with fake devices: different speeds, one that
// hangs, one that faults mid-problem, a problem that faults every device.
#include "core/tune/fleet/device_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

using namespace tiletune;
using namespace std::chrono_literals;

namespace {

enum class act { answer, fault, hang };

// A device that runs each problem in a thread of its own: `ms` of work in
// beats of 10 ms, then answers "p<problem>@<device>" (or faults, or hangs until abandoned).
class fake_device : public device_runner {
 public:
  fake_device(
      int index, int ms,
      std::function<act(std::size_t)> what = [](std::size_t) { return act::answer; })
      : index_(index), ms_(ms), what_(std::move(what)) {}
  ~fake_device() override {
    abandon();
    for (auto& t : threads_) t.join();
  }
  void start(std::size_t p, std::function<void()> beat,
             std::function<void(attempt_end)> done) override {
    ++started;
    threads_.emplace_back([this, p, beat, done] {
      const act a = what_(p);
      for (int t = 0; t < ms_; t += 10) {
        std::this_thread::sleep_for(10ms);
        if (a != act::hang) beat();
      }
      if (a == act::fault) return done({false, "fake fault on problem " + std::to_string(p), {}});
      if (a == act::hang) {
        std::unique_lock lock(m_);
        cv_.wait(lock, [this] { return abandoned_; });
        lock.unlock();
        return done(
            {true, "", std::string("late answer")});  // after being given up: must be ignored
      }
      done({true, "", "p" + std::to_string(p) + "@" + std::to_string(index_)});
    });
  }
  void abandon() override {
    {
      std::lock_guard lock(m_);
      abandoned_ = true;
    }
    cv_.notify_all();
  }
  std::atomic<int> started{0};

 private:
  int index_, ms_;
  std::function<act(std::size_t)> what_;
  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable cv_;
  bool abandoned_ = false;
};

std::string answer_of(const problem_outcome& o) { return std::any_cast<std::string>(o.result); }

// Every problem done once, by the device that says so, with its own answer.
void expect_all_answered(const std::vector<problem_outcome>& out) {
  for (std::size_t p = 0; p < out.size(); ++p) {
    ASSERT_EQ(out[p].what, problem_outcome::state::done) << "problem " << p << ": " << out[p].why;
    EXPECT_EQ(answer_of(out[p]), "p" + std::to_string(p) + "@" + std::to_string(out[p].device));
  }
}

pool_settings quick(double stall_s = 5, int attempts = 2) {
  pool_settings s;
  s.stall_s = [stall_s](std::size_t) { return stall_s; };
  s.max_attempts = attempts;
  return s;
}

}  // namespace

TEST(device_pool, deals_to_whichever_device_frees_up_and_answers_each_problem_once) {
  fake_device fast(0, 20), mid(3, 60), slow(7, 200);
  device_pool pool({{0, &fast}, {3, &mid}, {7, &slow}}, quick());
  std::vector<std::size_t> finish_order;
  std::map<std::size_t, int> finished;
  pool_events ev;
  ev.finished = [&](std::size_t p, const problem_outcome&) {
    finish_order.push_back(p);
    ++finished[p];
  };
  const auto out = pool.run(14, ev);
  ASSERT_EQ(out.size(), 14u);
  expect_all_answered(out);
  for (std::size_t p = 0; p < 14; ++p) EXPECT_EQ(finished[p], 1) << p;
  // A queue, not a static split: the fast device answers most, and each started only what it
  // answered.
  const auto& d = pool.devices();
  EXPECT_GT(d[0].answered, d[2].answered);
  EXPECT_EQ(d[0].answered + d[1].answered + d[2].answered, 14u);
  EXPECT_EQ(static_cast<std::size_t>(fast.started), d[0].answered);
  EXPECT_EQ(static_cast<std::size_t>(slow.started), d[2].answered);
  for (const auto& s : d) EXPECT_FALSE(s.retired);
  // Problems finish out of suite order, yet each outcome sits at its problem's index.
  EXPECT_FALSE(std::is_sorted(finish_order.begin(), finish_order.end()));
}

TEST(device_pool, retires_a_silent_device_and_deals_its_problem_again) {
  fake_device ok0(0, 20), hangs(1, 0, [](std::size_t) { return act::hang; }), ok2(2, 30);
  device_pool pool({{0, &ok0}, {1, &hangs}, {2, &ok2}}, quick(0.3));
  std::vector<std::string> retired;
  pool_events ev;
  ev.retired = [&](int dev, const std::string& why) {
    retired.push_back(std::to_string(dev) + ": " + why);
  };
  const auto started = std::chrono::steady_clock::now();
  const auto out = pool.run(6, ev);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  expect_all_answered(out);
  ASSERT_EQ(retired.size(), 1u);
  EXPECT_NE(retired[0].find("1: hung: no progress in 0.3 s"), std::string::npos) << retired[0];
  EXPECT_TRUE(pool.devices()[1].retired);
  EXPECT_EQ(pool.devices()[1].answered, 0u);
  EXPECT_EQ(hangs.started, 1);  // dealt one problem, never another
  // The hung device's problem (dealt second: problem 1) was answered elsewhere, and records the
  // hang.
  ASSERT_EQ(out[1].faults.size(), 1u);
  EXPECT_EQ(out[1].faults[0].device, 1);
  EXPECT_NE(out[1].device, 1);
}

TEST(device_pool, beats_keep_a_slow_device_that_makes_progress) {
  fake_device slow(0, 400), fast(1, 20);
  device_pool pool({{0, &slow}, {1, &fast}},
                   quick(0.3));  // 400 ms of work: retired without its beats
  const auto out = pool.run(4);
  expect_all_answered(out);
  EXPECT_FALSE(pool.devices()[0].retired) << pool.devices()[0].why;
  EXPECT_EQ(pool.devices()[0].answered, 1u);
}

TEST(device_pool, a_device_that_faults_mid_problem_is_retired_and_the_problem_redealt) {
  fake_device ok0(0, 30),
      faults(5, 40, [](std::size_t p) { return p == 1 ? act::fault : act::answer; });
  device_pool pool({{0, &ok0}, {5, &faults}}, quick());
  const auto out = pool.run(8);
  expect_all_answered(out);
  EXPECT_TRUE(pool.devices()[1].retired);
  EXPECT_EQ(pool.devices()[1].why, "fake fault on problem 1");
  EXPECT_EQ(out[1].device, 0);
  ASSERT_EQ(out[1].faults.size(), 1u);
  EXPECT_EQ(out[1].faults[0].device, 5);
  EXPECT_EQ(pool.devices()[0].answered, 8u);  // everything after the fault went to device 0
}

TEST(device_pool, a_problem_that_faults_every_device_ends_failed_after_the_bounded_attempts) {
  auto poison = [](std::size_t p) { return p == 2 ? act::fault : act::answer; };
  fake_device d0(0, 20, poison), d1(1, 20, poison), d2(2, 20, poison), d3(3, 20, poison);
  device_pool pool({{0, &d0}, {1, &d1}, {2, &d2}, {3, &d3}}, quick(5, 2));
  const auto out = pool.run(10);
  ASSERT_EQ(out[2].what, problem_outcome::state::failed);
  EXPECT_EQ(out[2].faults.size(), 2u);
  EXPECT_NE(out[2].why.find("faulted on 2 device(s)"), std::string::npos) << out[2].why;
  int retired = 0;
  for (const auto& d : pool.devices()) retired += d.retired;
  EXPECT_EQ(retired, 2);  // the bound also bounds the devices one bad problem costs
  for (std::size_t p = 0; p < 10; ++p)
    if (p != 2) {
      EXPECT_EQ(out[p].what, problem_outcome::state::done) << p;
      EXPECT_EQ(answer_of(out[p]), "p" + std::to_string(p) + "@" + std::to_string(out[p].device));
    }
}

TEST(device_pool, when_every_device_is_retired_the_rest_fail_instead_of_waiting) {
  auto poison = [](std::size_t p) { return p == 0 ? act::fault : act::answer; };
  fake_device d0(0, 10, poison), d1(1, 50, poison);
  device_pool pool({{0, &d0}, {1, &d1}}, quick(5, 5));
  const auto out = pool.run(3);
  // Device 0 faults on problem 0 while device 1 answers problem 1, then takes problem 0 and faults
  // too.
  EXPECT_EQ(out[0].what, problem_outcome::state::failed);
  EXPECT_NE(out[0].why.find("no healthy device"), std::string::npos) << out[0].why;
  EXPECT_EQ(out[0].faults.size(), 2u);
  EXPECT_EQ(out[1].what, problem_outcome::state::done);
  EXPECT_EQ(out[1].device, 1);
  // What was left fails rather than waiting for a device that will never come.
  EXPECT_EQ(out[2].what, problem_outcome::state::failed);
  EXPECT_TRUE(pool.devices()[0].retired && pool.devices()[1].retired);
}

TEST(device_pool, a_spent_budget_deals_no_new_problem) {
  fake_device d0(0, 20), d1(1, 20);
  pool_settings s = quick();
  std::atomic<int> asked{0};
  s.keep_dealing = [&] { return ++asked <= 3; };
  device_pool pool({{0, &d0}, {1, &d1}}, s);
  const auto out = pool.run(7);
  int done = 0, not_run = 0;
  for (const auto& o : out) {
    done += o.what == problem_outcome::state::done;
    not_run += o.what == problem_outcome::state::not_run;
  }
  EXPECT_EQ(done, 3);
  EXPECT_EQ(not_run, 4);
  for (std::size_t p = 0; p < 3; ++p)
    EXPECT_EQ(out[p].what, problem_outcome::state::done);  // suite order
}

TEST(device_pool, refuses_no_devices) {
  EXPECT_THROW(device_pool({}, pool_settings{}), std::invalid_argument);
}
