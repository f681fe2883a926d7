// Internal to the measuring worker: timing a launch, sample after sample,
// until the spread is small enough, with the L2 evicted between samples.
#pragma once
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/worker_state.hpp"

namespace tiletune {

// Between samples: evict the L2 (--l2-flush: by writing, by reading, or not) and give C back its
// starting values when beta reads it.
inline void prepare_sample(gpu_state& g) {
  if (g.read_flush)
    g.read_flush->launch(g.flush.get(), g.flush_bytes, g.stream);
  else if (g.flush_bytes)
    TT_CUDA(cudaMemsetAsync(g.flush.get(), 0, g.flush_bytes, g.stream));
  if (g.setup.problem.beta != 0.0)
    TT_CUDA(cudaMemcpyAsync(g.c.get(), g.c0.get(), g.c_bytes(), cudaMemcpyDeviceToDevice, g.stream));
}

template <typename Launch>
timing_stats sample_with(gpu_state& g, Launch&& launch) {
  for (std::size_t i = 0; i < g.setup.sampling.warmup; ++i) {
    prepare_sample(g);
    launch();
  }
  TT_CUDA(cudaStreamSynchronize(g.stream));
  // Then, if asked, on until the host clock has seen warmup_ms of them (the card into its power cap).
  if (g.setup.sampling.warmup_ms > 0) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    while (std::chrono::duration<double, std::milli>(clock::now() - start).count() < g.setup.sampling.warmup_ms) {
      for (int i = 0; i < 4; ++i) {
        prepare_sample(g);
        launch();
      }
      TT_CUDA(cudaStreamSynchronize(g.stream));
    }
  }
  std::vector<double> samples;
  while (!enough_samples(samples, g.setup.sampling)) {
    // Batches of samples between synchronizations keep the GPU busy.
    const std::size_t batch = samples.size() < g.setup.sampling.min_samples ? g.setup.sampling.min_samples : 10;
    for (std::size_t i = 0; i < batch; ++i) {
      prepare_sample(g);
      g.timer->begin_sample(g.stream);
      launch();
      g.timer->end_sample(g.stream);
    }
    const auto got = g.timer->collect(g.stream);
    samples.insert(samples.end(), got.begin(), got.end());
  }
  return summarize(samples);
}

// CUPTI that enabled but then misses records (seen under some profilers and
// containers) hands over to CUDA events for the rest of the worker's life.
template <typename Launch>
timing_stats sample(gpu_state& g, Launch&& launch) {
  try {
    return sample_with(g, launch);
  } catch (const cuda_error&) {
    throw;
  } catch (const std::runtime_error& e) {
    if (g.timer->name() != "cupti") throw;
    g.timer_note = std::string("CUPTI failed mid-run (") + e.what() + "); timing with CUDA events";
    std::fprintf(stderr, "tiletune worker: %s\n", g.timer_note.c_str());
    g.timer = make_event_timer();
    return sample_with(g, launch);
  }
}

}  // namespace tiletune
