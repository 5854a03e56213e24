// base/parallel: parallel_ordered consumes every item once, in index
// order, after its produce; keeps within its window and budget; stops on the
// first exception from either side and rethrows it.
#include <doctest/doctest.h>
#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "base/parallel.hpp"

using namespace hpak;

TEST_CASE("parallel_ordered: every item consumed once, in order, after it was produced") {
  for (unsigned threads : {1u, 3u, 8u}) {
    for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(500)}) {
      CAPTURE(threads);
      CAPTURE(n);
      std::vector<std::atomic<int>> produced(n);
      std::vector<size_t> order;
      bool produced_first = true;
      parallel_ordered(
          n, threads, InFlight{}, [](size_t) { return uint64_t(1); }, [&](size_t i) { produced[i]++; },
          [&](size_t i) {
            if (produced[i] != 1) produced_first = false;
            order.push_back(i);
          });
      CHECK(produced_first);
      REQUIRE(order.size() == n);
      for (size_t i = 0; i < n; i++) CHECK(order[i] == i);
    }
  }
}

TEST_CASE("parallel_ordered: at most `window` items and `budget` cost ahead of the consumer") {
  std::mutex mu;
  size_t live = 0, most = 0;
  auto run = [&](InFlight limits, uint64_t each) {
    live = most = 0;
    parallel_ordered(
        400, 4, limits, [&](size_t) { return each; },
        [&](size_t) {
          std::lock_guard lk(mu);
          most = std::max(most, ++live);
        },
        [&](size_t) {
          std::lock_guard lk(mu);
          live--;
        });
  };
  run(InFlight{5, UINT64_MAX}, 1);
  CHECK(most <= 5);
  // Within the budget, plus the next item, which is always let in.
  run(InFlight{1024, 35}, 10);
  CHECK(most <= 4);
  // An item dearer than the whole budget passes only when it is next: one at a time.
  run(InFlight{1024, 0}, 1);
  CHECK(most == 1);
}

TEST_CASE("parallel_ordered: an exception in produce or consume stops the pipeline and is rethrown") {
  for (unsigned threads : {1u, 4u}) {
    CAPTURE(threads);
    std::atomic<size_t> consumed{0};
    CHECK_THROWS_WITH_AS(parallel_ordered(
                             1000, threads, InFlight{8, UINT64_MAX}, [](size_t) { return uint64_t(0); },
                             [](size_t i) {
                               if (i == 100) throw std::runtime_error("produce 100");
                             },
                             [&](size_t) { consumed++; }),
                         "produce 100", std::runtime_error);
    CHECK(consumed <= 100); // item 100 was never produced, so never consumed, nor any after it

    std::atomic<size_t> produced{0};
    CHECK_THROWS_WITH_AS(parallel_ordered(
                             1000, threads, InFlight{8, UINT64_MAX}, [](size_t) { return uint64_t(0); },
                             [&](size_t) { produced++; },
                             [](size_t i) {
                               if (i == 10) throw std::runtime_error("consume 10");
                             }),
                         "consume 10", std::runtime_error);
    CHECK(produced <= 18); // the window (8 past the 10 consumed) held the workers back
  }
}
