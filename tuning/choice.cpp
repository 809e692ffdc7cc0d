#include "choice.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tune {

double ProblemTimes::best() const {
  double b = 1e30;
  for (const auto& t : times) b = std::min(b, t.second.median);
  return b;
}

Gain paired(const ProblemTimes& p, const std::string& v) {
  const Timing& h = p.times.at(p.heuristic);
  const Timing& t = p.times.at(v);
  if (&h == &t) return {1, 0};
  if (h.rounds.empty() || h.rounds.size() != t.rounds.size()) return {h.median / t.median, p.spread};
  std::vector<double> r;
  for (size_t k = 0; k < h.rounds.size(); ++k) r.push_back(h.rounds[k] / t.rounds[k]);
  std::sort(r.begin(), r.end());
  const size_t n = r.size();
  return {r[n / 2], (r[n * 3 / 4] - r[n / 4]) / 2};
}

Decision choose_winner(const std::vector<const ProblemTimes*>& problems) {
  Decision d;
  if (problems.empty()) return d;
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& tv : problems.front()->times) {
    double sum = 0;
    bool everywhere = true;
    for (const ProblemTimes* p : problems) {
      auto it = p->times.find(tv.first);
      if (it == p->times.end() || it->second.single) {
        everywhere = false;
        break;
      }
      sum += std::log(it->second.median / p->best());
    }
    if (everywhere) ranked.push_back({sum, tv.first});
  }
  std::sort(ranked.begin(), ranked.end());
  for (const auto& cand : ranked) {
    double log_gain = 0, noise = 0;
    bool nowhere_slower = true, differs = false;
    for (const ProblemTimes* p : problems) {
      const Gain g = paired(*p, cand.second);
      log_gain += std::log(g.ratio);
      noise += g.noise / problems.size();
      nowhere_slower = nowhere_slower && g.ratio >= 1 - std::max(kMinGain, g.noise);
      differs = differs || p->heuristic != cand.second;
    }
    const double gain = std::exp(log_gain / problems.size()) - 1;
    noise = std::max(noise, kMinGain);
    if (d.variant.empty()) d = {cand.second, gain, noise, false};  // the best-ranked, for the log
    if (!differs) break;  // the heuristic's own pick ranks here: nothing above it won
    if (gain > noise && nowhere_slower) return {cand.second, gain, noise, true};
  }
  return d;
}

std::set<std::string> sibling_contenders(const ProblemTimes& sibling) {
  std::set<std::string> out;
  auto h = sibling.times.find(sibling.heuristic);
  if (h == sibling.times.end()) return out;
  for (const auto& tv : sibling.times)
    if (!tv.second.single && (tv.second.confirmed || tv.second.median <= h->second.median * kSiblingMargin))
      out.insert(tv.first);
  return out;
}

}  // namespace tune
