// kgen-tune's decisions without a GPU: the paired comparison with the
// heuristic's pick, and a bucket's choice (kept only past the noise, never
// slower anywhere, the heuristic stays otherwise).
#include <set>
#include <string>
#include <vector>

#include "catch.hpp"
#include "choice.hpp"

using tune::ProblemTimes;
using tune::Timing;

namespace {

Timing timed(double median, std::vector<double> rounds = {}) {
  Timing t;
  t.median = median;
  t.runs = 10;
  t.rounds = rounds;
  t.confirmed = !rounds.empty();
  return t;
}

// A problem where each variant takes `scale` times its rounds' base (the
// same swing in every variant's rounds, as a clock change would give).
ProblemTimes problem(const std::string& heuristic, std::vector<std::pair<std::string, double>> variants,
                     std::vector<double> swing = {1, 1.5, 1, 1.5, 1, 1.5, 1}) {
  ProblemTimes p;
  p.heuristic = heuristic;
  p.spread = 0.25;  // the heuristic's own medians swing by a quarter
  for (const auto& v : variants) {
    std::vector<double> rounds;
    for (double s : swing) rounds.push_back(v.second * s);
    p.times[v.first] = timed(v.second, rounds);
  }
  return p;
}

}  // namespace

TEST_CASE("paired: per-round ratios cancel a swing common to both; unpaired falls back to medians",
          "[tune]") {
  ProblemTimes p = problem("h", {{"h", 100}, {"a", 90}});
  const tune::Gain self = tune::paired(p, "h");
  CHECK(self.ratio == 1);
  CHECK(self.noise == 0);
  const tune::Gain a = tune::paired(p, "a");
  CHECK(a.ratio == Approx(100.0 / 90));
  CHECK(a.noise == Approx(0).margin(1e-12));  // the 50% swing is in both
  p.times["b"] = timed(80);                    // not confirmed: medians and the heuristic's spread
  const tune::Gain b = tune::paired(p, "b");
  CHECK(b.ratio == Approx(100.0 / 80));
  CHECK(b.noise == 0.25);
  p.times["c"] = timed(95, {95, 95, 190, 95, 95, 95, 95});  // one round of c twice as slow
  const tune::Gain c = tune::paired(p, "c");
  CHECK(c.ratio == Approx(100.0 / 95));  // the median ignores it
}

TEST_CASE("choose_winner keeps the fastest only past the noise and slower nowhere", "[tune]") {
  SECTION("faster on every problem: kept") {
    const ProblemTimes p1 = problem("h", {{"h", 100}, {"a", 90}, {"b", 95}});
    const ProblemTimes p2 = problem("h", {{"h", 200}, {"a", 180}, {"b", 199}});
    const tune::Decision d = tune::choose_winner({&p1, &p2});
    CHECK(d.kept);
    CHECK(d.variant == "a");
    CHECK(d.gain == Approx(1.0 / 0.9 - 1));
    CHECK(d.noise == tune::kMinGain);
  }
  SECTION("the heuristic's pick is the fastest: it stays") {
    const ProblemTimes p1 = problem("h", {{"h", 90}, {"a", 100}});
    const tune::Decision d = tune::choose_winner({&p1});
    CHECK_FALSE(d.kept);
    CHECK(d.variant == "h");
  }
  SECTION("a gain within the noise floor: the heuristic stays") {
    const ProblemTimes p1 = problem("h", {{"h", 100}, {"a", 99.5}});
    CHECK_FALSE(tune::choose_winner({&p1}).kept);
  }
  SECTION("a gain within the paired noise: the heuristic stays") {
    ProblemTimes p1 = problem("h", {{"h", 100}});
    p1.times["a"] = timed(95, {95, 105, 95, 105, 95, 105, 95});  // 5% off either way, round to round
    const tune::Decision d = tune::choose_winner({&p1});
    CHECK_FALSE(d.kept);
    CHECK(d.noise > 0.04);
  }
  SECTION("fastest on the geomean but slower than the heuristic on one problem: the next candidate") {
    const ProblemTimes p1 = problem("h", {{"h", 100}, {"a", 50}, {"b", 90}});
    const ProblemTimes p2 = problem("h", {{"h", 100}, {"a", 110}, {"b", 92}});
    const tune::Decision d = tune::choose_winner({&p1, &p2});
    CHECK(d.kept);
    CHECK(d.variant == "b");
  }
  SECTION("a variant missing from a problem, or timed once only, is no candidate") {
    ProblemTimes p1 = problem("h", {{"h", 100}, {"a", 50}, {"s", 40}});
    const ProblemTimes p2 = problem("h", {{"h", 100}, {"s", 40}});
    p1.times["s"].single = true;
    const tune::Decision d = tune::choose_winner({&p1, &p2});
    CHECK_FALSE(d.kept);
    CHECK(d.variant == "h");
  }
  SECTION("heuristics that differ across the bucket: each problem compares with its own pick") {
    const ProblemTimes p1 = problem("h1", {{"h1", 100}, {"h2", 120}, {"a", 100}});
    const ProblemTimes p2 = problem("h2", {{"h1", 130}, {"h2", 100}, {"a", 101}});
    const tune::Decision d = tune::choose_winner({&p1, &p2});
    // a matches each problem's pick: no gain past the floor
    CHECK_FALSE(d.kept);
  }
  SECTION("no problems: nothing") {
    CHECK(tune::choose_winner({}).variant.empty());
  }
}

TEST_CASE("a problem repeated in another mode times only the variants that could still win its bucket",
          "[tune]") {
  ProblemTimes sibling;
  sibling.heuristic = "h";
  sibling.times["h"] = timed(10.0, {10, 10, 10, 10, 10, 10, 10});
  sibling.times["fast"] = timed(8.0, {8, 8, 8, 8, 8, 8, 8});   // confirmed, faster
  sibling.times["near"] = timed(10.9);                          // within the margin, unconfirmed
  sibling.times["slow"] = timed(11.5);                          // past the margin: cannot be kept
  Timing four_x = timed(45.0);
  four_x.single = true;  // a single run 4x the best
  sibling.times["single"] = four_x;
  Timing confirmed_slow = timed(11.5, {11.5, 11.4, 11.6, 11.5, 11.5, 11.5, 11.5});
  sibling.times["confirmed"] = confirmed_slow;  // confirmed: its rounds are kept in the running
  const std::set<std::string> c = tune::sibling_contenders(sibling);
  CHECK(c == std::set<std::string>{"h", "fast", "near", "confirmed"});
  // what it leaves out choose_winner would not keep: slower on the sibling beyond its noise
  ProblemTimes other = problem("h", {{"h", 10.0}, {"slow", 7.0}});
  const tune::Decision d = tune::choose_winner({&sibling, &other});
  CHECK(d.variant == "slow");  // the best-ranked, for the log
  CHECK_FALSE(d.kept);
  // no heuristic time on the sibling: nothing to prune against
  ProblemTimes empty;
  empty.heuristic = "h";
  CHECK(tune::sibling_contenders(empty).empty());
}
