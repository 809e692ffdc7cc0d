// The sweep's decisions, apart from any GPU: how a variant compares with the
// heuristic's pick on one problem, and which variant (if any) becomes a
// bucket's database entry.  Host-tested (tests/host/test_tune_choice.cpp).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tune {

// One variant's timing on one problem.
struct Timing {
  double median = 0, spread = 0;  // us; spread: relative half inter-quartile range
  int runs = 0;
  bool single = false;            // one run only: far slower than the best
  bool confirmed = false;         // timed again in turns with the other contenders
  std::vector<double> rounds;     // the medians of those turns, in round order
};

// Every supporting variant's timing on one problem, and the heuristic's pick.
struct ProblemTimes {
  std::string heuristic;
  double spread = 0;  // run-to-run spread of the heuristic's pick, relative
  std::map<std::string, Timing> times;
  double best() const;  // the fastest median
};

// Variant v against the heuristic's pick on one problem: the median over
// the confirmation rounds of t(heuristic) / t(v), both timed in the same
// round (so that a clock swing common to both cancels), and the half
// inter-quartile range of those ratios; from the medians and the
// heuristic's spread when either was not confirmed in the same rounds.
struct Gain {
  double ratio, noise;
};
Gain paired(const ProblemTimes& p, const std::string& v);

// A bucket's choice: the candidates (variants timed in full on every
// problem of the bucket) in order of their geomean time over each
// problem's fastest; the first that beats the heuristic's picks by more
// than the mean paired noise (at least kMinGain) and is slower on no
// problem beyond that problem's noise is kept.  When none is, `variant` is
// the best-ranked candidate (for the log) and kept is false.
constexpr double kMinGain = 0.01;
struct Decision {
  std::string variant;
  double gain = 0, noise = 0;  // geomean time ratio over the heuristic - 1; its noise
  bool kept = false;
};
Decision choose_winner(const std::vector<const ProblemTimes*>& problems);

// The variants worth timing on a problem of the same bucket as `sibling`,
// one that repeats the sibling's line in another mode (softmax's log,
// reduce's max): those timed in full on the sibling that were confirmed or
// came within kSiblingMargin of its heuristic's pick there.  Any other was
// slower than that pick on the sibling by more than a brute-force stretch
// strays, so choose_winner, which keeps only a variant slower on no
// problem of its bucket, could not keep it: its time would change no
// choice.  The heuristic's and the database's picks are timed regardless.
constexpr double kSiblingMargin = 1.10;
std::set<std::string> sibling_contenders(const ProblemTimes& sibling);

}  // namespace tune
