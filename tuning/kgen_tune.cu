// kgen-tune: the autotuning sweep and its report.
//
//   kgen-tune [--ops softmax,reduce,...] [--dtypes f32,f16,bf16] [--budget-ms 3]
//             [--problems DIR] [--db-dir DIR] [--csv FILE]
//   kgen-tune --report [--ops ...] [--dtypes ...] [--budget-ms 3] [--heldout DIR] [--md FILE] [--csv FILE]
//
// Sweep: every problem of tuning/problems/<family>.txt, in each dtype, runs
// every compiled variant of its family and element that supports it (time
// budget per variant, median of the event-timed runs; inputs rotated past
// the L2).  Problems are grouped by the runtime's bucket key; a bucket's
// winner is the variant with the best geomean time relative to each
// problem's fastest, and is kept only if it beats the heuristic's picks by
// more than the run-to-run spread measured on them (and is slower than them
// on no problem of the bucket beyond it).  The contenders of each problem
// are timed again in turns before anything is decided (confirm()).  Raw timings go to the CSV, the
// kept winners to <db-dir>/<gpu>_<sms>.json (entries of families not swept
// are kept from an existing database of the same GPU and kernels).
//
// Report: on the held-out shapes of tuning/heldout/<family>.txt, the time of
// the variant tuned selection picks (the database in use: KGEN_TUNING_DB or
// the compiled-in one), of the heuristic's pick, and of the fastest variant
// found by brute force (the oracle), with geomean ratios per family.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "cases.hpp"
#include "choice.hpp"
#include "harness.cuh"
#include "registry.hpp"
#include "tuning/db.hpp"
#include "tuning/json.hpp"

namespace {

using cases::Case;
using tune::Gain;
using tune::Timing;
using tune::paired;

const std::vector<std::string> kFamilies = {"softmax", "softmax_backward", "reduce", "permute",
                                            "expand",  "where",            "topk"};

struct Options {
  bool report = false;
  std::vector<std::string> ops = kFamilies;
  std::vector<std::string> dtypes = {"f32", "f16", "bf16"};
  double budget_ms = 3;
  std::string problems = KGEN_SOURCE_DIR "/tuning/problems";
  std::string heldout = KGEN_SOURCE_DIR "/tuning/heldout";
  std::string db_dir = KGEN_SOURCE_DIR "/tuning/db";
  std::string csv, md;
};

// One problem, measured: its bucket, the picks, every supporting variant's
// timing (tune::ProblemTimes, which the choice reads).
struct Measured : tune::ProblemTimes {
  std::unique_ptr<Case> c;
  const Measured* sibling = nullptr;  // the same problem in its line's first mode, measured before
  kgen::Family family;
  int element = 0;
  std::string bucket, tuned;  // tuned: the database's pick (report)
  bool hit = false;
};

std::string gpu_file_name(const cudaDeviceProp& prop) {
  std::string n = prop.name;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n + "_" + std::to_string(prop.multiProcessorCount);
}

std::string now_text() {
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return date;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The problems of one family's file, one case per line, mode and dtype.
struct Line {
  cases::Words words;
  std::string dtype;
  int number;
  int sibling = -1;  // the index of this line's problem in its first mode (tune::sibling_contenders)
};

// A line in each mode that shares its buckets, where it names none: a
// database entry serves all of them, so it is chosen on all of them (the
// H100 database's softmax entries, chosen on the plain mode, ran float16
// log_softmax of 2048 columns at 59% of copy on an H200 where the
// heuristic reached 98%).  softmax and softmax_backward: plain and log;
// reduce: sum and max (the value ops' buckets; argmax and argmin are
// named where wanted).
std::vector<cases::Words> modes_of(const std::string& family, const cases::Words& words) {
  auto with = [&](const char* key, const char* value) {
    cases::Words w = words;
    w[key] = value;
    return w;
  };
  if ((family == "softmax" && !words.count("log") && !words.count("mask")) ||
      (family == "softmax_backward" && !words.count("log")))
    return {with("log", "0"), with("log", "1")};
  if (family == "reduce" && !words.count("op")) return {with("op", "sum"), with("op", "max")};
  return {words};
}

std::vector<Line> read_problems(const std::string& file, const std::string& family,
                                const std::vector<std::string>& dtypes) {
  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "kgen-tune: cannot read %s\n", file.c_str());
    std::exit(2);
  }
  std::vector<Line> out;
  std::string line, error;
  for (int number = 1; std::getline(in, line); ++number) {
    cases::Words words;
    if (!cases::parse_line(line, &words, &error)) {
      std::fprintf(stderr, "kgen-tune: %s:%d: %s\n", file.c_str(), number, error.c_str());
      std::exit(2);
    }
    if (words.empty()) continue;
    const std::vector<cases::Words> modes = modes_of(family, words);
    for (const cases::Words& mode : modes)
      for (const std::string& d : cases::line_dtypes(mode, dtypes)) {
        // a line that names a mode another line already gets is measured once
        auto find = [&](const cases::Words& w) {
          return std::find_if(out.begin(), out.end(), [&](const Line& l) { return l.dtype == d && l.words == w; });
        };
        if (find(mode) != out.end()) continue;
        const auto first = &mode == &modes.front() ? out.end() : find(modes.front());
        out.push_back({mode, d, number, first == out.end() ? -1 : static_cast<int>(first - out.begin())});
      }
  }
  return out;
}

kgen::Family family_enum(const std::string& name) {
  for (int k = 0; k < kgen::kFamilies; ++k)
    if (name == kgen::family_name(static_cast<kgen::Family>(k))) return static_cast<kgen::Family>(k);
  std::fprintf(stderr, "kgen-tune: unknown family %s\n", name.c_str());
  std::exit(2);
}

std::string element_name(int element) {
  if (element >= kgen::movement_key(0)) return "b" + std::to_string(element - kgen::movement_key(0));
  switch (element) {
    case KGEN_FLOAT32: return "f32";
    case KGEN_FLOAT16: return "f16";
    case KGEN_BFLOAT16: return "bf16";
    case KGEN_FLOAT64: return "f64";
    case KGEN_INT32: return "i32";
  }
  return "e" + std::to_string(element);
}

Timing time_variant(Case& c, const char* v, double budget_ms, int min_runs = 5, int warmups = 2) {
  auto once = [&](int s) {
    const kgen_status_t st = c.run(v, s);
    if (st != KGEN_OK) {
      std::fprintf(stderr, "kgen-tune: %s on %s %s failed: %s\n", v, c.dtype.c_str(), c.text.c_str(),
                   kgen_last_error());
      std::exit(1);
    }
  };
  const std::vector<double> us = budget_samples(budget_ms, min_runs, 400, c.sets, once, warmups);
  Timing t;
  t.runs = static_cast<int>(us.size());
  t.median = us[us.size() / 2];
  t.spread = (us[us.size() * 3 / 4] - us[us.size() / 4]) / 2 / t.median;
  return t;
}

// Progress over a whole sweep: variants timed of the total candidates.
struct Progress {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  int64_t done = 0, total = 0;
  void line(const std::string& what) {
    const double s = seconds_since(t0);
    const double left = done > 0 ? s * (total - done) / done : 0;
    std::fprintf(stderr, "[%lld/%lld variants, %.0f s, about %.0f s left] %s\n", static_cast<long long>(done),
                 static_cast<long long>(total), s, left, what.c_str());
  }
};

// Variants that failed on a problem they accepted.
std::vector<std::string> failures;

int finish(int rc) {
  if (failures.empty()) return rc;
  std::fprintf(stderr, "kgen-tune: %zu variant runs FAILED (left out of the choice):\n", failures.size());
  for (const std::string& f : failures) std::fprintf(stderr, "  %s\n", f.c_str());
  return 1;
}

// The brute-force pass times each variant once, in one stretch: a clock or
// power swing during it moves one variant's median by up to tens of percent
// (H100: single stretches 20-40% off on a few problems of a sweep).  So the
// variants that decide (the heuristic's pick, the database's pick and the
// fastest few) are timed again in turns, kConfirmRounds rounds of one
// budget each, and keep the median of their round medians; the heuristic's
// spread is the inter-quartile range of its rounds over their median.
constexpr int kConfirmRounds = 7;
constexpr int kConfirmFastest = 6;

void confirm(Measured& m, const Options& o) {
  std::vector<std::pair<double, std::string>> fastest;
  for (const auto& kv : m.times)
    if (!kv.second.single) fastest.push_back({kv.second.median, kv.first});
  std::sort(fastest.begin(), fastest.end());
  std::vector<std::string> chosen = {m.heuristic};
  if (m.times.count(m.tuned) && m.tuned != m.heuristic) chosen.push_back(m.tuned);
  for (size_t k = 0; k < fastest.size() && k < static_cast<size_t>(kConfirmFastest); ++k)
    if (std::find(chosen.begin(), chosen.end(), fastest[k].second) == chosen.end())
      chosen.push_back(fastest[k].second);
  std::map<std::string, std::vector<double>> rounds;
  for (int r = 0; r < kConfirmRounds; ++r)
    for (const std::string& v : chosen) rounds[v].push_back(time_variant(*m.c, v.c_str(), o.budget_ms).median);
  for (auto& kv : rounds) {
    Timing& timing = m.times[kv.first];
    timing.rounds = kv.second;
    std::vector<double>& t = kv.second;
    std::sort(t.begin(), t.end());
    timing.median = t[t.size() / 2];
    timing.spread = (t[t.size() * 3 / 4] - t[t.size() / 4]) / t[t.size() / 2];
    timing.runs *= kConfirmRounds + 1;
    timing.confirmed = true;
  }
  m.spread = m.times[m.heuristic].spread;
}

// Measures every supporting variant of the case's family and element.
void measure(Measured& m, const Options& o, Progress& progress) {
  Case& c = *m.c;
  c.prepare();
  const char* name = nullptr;
  kgen::tuning::set_tracing(true);
  kgen::tuning::set_enabled(true);
  if (c.selected(&name) != KGEN_OK) {
    std::fprintf(stderr, "kgen-tune: selection failed on %s %s: %s\n", c.dtype.c_str(), c.text.c_str(),
                 kgen_last_error());
    std::exit(1);
  }
  m.tuned = name;
  m.hit = kgen::tuning::last_trace().hit;
  kgen::tuning::set_enabled(false);
  if (c.selected(&name) != KGEN_OK) std::exit(1);
  kgen::tuning::set_enabled(true);
  m.heuristic = name;
  const kgen::tuning::Trace& t = kgen::tuning::last_trace();
  m.family = t.family;
  m.element = t.element;
  m.bucket = t.bucket;
  kgen::tuning::set_tracing(false);
  if (!kgen::Registry::find(m.heuristic)) {  // a plain copy: no kernel to choose
    c.release();
    return;
  }

  double best = 1e30;
  // the heuristic's pick first: a baseline for the skip rule, and its spread
  std::vector<std::string> names = {m.heuristic};
  for (const kgen::VariantInfo* v : kgen::Registry::of(m.family, m.element))
    if (v->name != m.heuristic) names.push_back(v->name);
  cudaEvent_t first_start, first_end;
  CUDA_OK(cudaEventCreate(&first_start));
  CUDA_OK(cudaEventCreate(&first_end));
  // the same problem in another mode, in the same bucket: only what could
  // still win there (tune::sibling_contenders)
  const bool pruned = m.sibling != nullptr && m.sibling->bucket == m.bucket;
  const std::set<std::string> contenders = pruned ? tune::sibling_contenders(*m.sibling) : std::set<std::string>{};
  for (const std::string& v : names) {
    ++progress.done;
    if (v != m.heuristic && v != m.tuned && c.hopeless(v)) continue;
    if (pruned && v != m.heuristic && v != m.tuned && !contenders.count(v)) continue;
    // the first run, which also asks whether the variant takes the problem,
    // is timed: modules are loaded eagerly (main), so it pays no loading
    CUDA_OK(cudaEventRecord(first_start));
    const kgen_status_t st = c.run(v.c_str(), 0);
    CUDA_OK(cudaEventRecord(first_end));
    if (st == KGEN_ERROR_UNSUPPORTED) continue;
    if (st != KGEN_OK) {
      // a variant that accepts the problem and then fails is a defect to
      // report, not a reason to lose the sweep; a sticky error ends it
      const std::string what = v + " on " + c.family + " " + c.dtype + " " + c.text + ": " + kgen_last_error();
      std::fprintf(stderr, "kgen-tune: FAILED %s\n", what.c_str());
      failures.push_back(what);
      if (cudaDeviceSynchronize() != cudaSuccess) {
        std::fprintf(stderr, "kgen-tune: the device is in an error state; stopping\n");
        std::exit(1);
      }
      continue;
    }
    // a variant 4x slower than the best in a single run keeps that run: its
    // median would cost time and change no choice.  A first run past 4x is
    // run once more before it counts: a kernel's first launch also sets its
    // attributes (shared memory, cluster size) from the host, which the
    // events see on problems of a few microseconds.
    CUDA_OK(cudaEventSynchronize(first_end));
    float first_ms = 0;
    CUDA_OK(cudaEventElapsedTime(&first_ms, first_start, first_end));
    if (first_ms * 1000.0 > 4 * best) {
      const Timing again = time_variant(c, v.c_str(), 0, 1, 0);
      if (again.median > 4 * best) {
        Timing one = again;
        one.single = true;
        m.times[v] = one;
        continue;
      }
    }
    const Timing full = time_variant(c, v.c_str(), o.budget_ms);
    m.times[v] = full;
    best = std::min(best, full.median);
  }
  CUDA_OK(cudaEventDestroy(first_start));
  CUDA_OK(cudaEventDestroy(first_end));
  confirm(m, o);
  c.release();
  char best_text[32];
  std::snprintf(best_text, sizeof best_text, "%.1f", m.best());
  progress.line(c.family + " " + c.dtype + " " + c.text + ": " + std::to_string(m.times.size()) +
                " variants, bucket " + m.bucket + ", best " + best_text + " us");
}

void write_csv(const std::string& file, const std::vector<Measured>& all, const cudaDeviceProp& prop) {
  FILE* f = std::fopen(file.c_str(), "w");
  if (!f) {
    std::perror(file.c_str());
    std::exit(1);
  }
  std::fprintf(f, "gpu,sms,commit,family,dtype,problem,bucket,element,variant,median_us,spread,runs,single,"
                  "confirmed,heuristic,gbps\n");
  for (const Measured& m : all)
    for (const auto& kv : m.times)
      std::fprintf(f, "%s,%d,%s,%s,%s,\"%s\",%s,%s,%s,%.3f,%.4f,%d,%d,%d,%d,%.1f\n", prop.name,
                   prop.multiProcessorCount, commit().c_str(), m.c->family.c_str(), m.c->dtype.c_str(),
                   m.c->text.c_str(), m.bucket.c_str(), element_name(m.element).c_str(), kv.first.c_str(),
                   kv.second.median, kv.second.spread, kv.second.runs, kv.second.single ? 1 : 0,
                   kv.second.confirmed ? 1 : 0,
                   kv.first == m.heuristic ? 1 : 0, m.c->traffic / kv.second.median / 1e3);
  std::fclose(f);
  std::fprintf(stderr, "kgen-tune: raw timings in %s\n", file.c_str());
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

struct Winner {
  std::string family, bucket, element, variant;
  double gain;  // over the heuristic: geomean time ratio - 1
};

// Picks each bucket's winner (tune::choose_winner).
std::vector<Winner> pick_winners(const std::vector<Measured>& all) {
  std::map<std::tuple<int, int, std::string>, std::vector<const tune::ProblemTimes*>> buckets;
  std::map<std::tuple<int, int, std::string>, kgen::Family> families;
  for (const Measured& m : all)
    if (!m.times.empty()) {
      const auto key = std::make_tuple(static_cast<int>(m.family), m.element, m.bucket);
      buckets[key].push_back(&m);
      families[key] = m.family;
    }
  std::vector<Winner> out;
  for (const auto& kv : buckets) {
    const char* family = kgen::family_name(families[kv.first]);
    const std::string element = element_name(std::get<1>(kv.first)), bucket = std::get<2>(kv.first);
    const tune::Decision d = tune::choose_winner(kv.second);
    if (d.kept) out.push_back({family, bucket, element, d.variant, d.gain});
    std::fprintf(stderr, "bucket %s %s %s (%zu problems): %s %s, %.1f%% over the heuristic, noise %.1f%%: %s\n",
                 family, element.c_str(), bucket.c_str(), kv.second.size(), d.kept ? "winner" : "best",
                 d.variant.empty() ? "none" : d.variant.c_str(), 100 * d.gain, 100 * d.noise,
                 d.kept ? "kept" : "heuristic stays");
  }
  return out;
}

// Writes the database, keeping the entries of families this run did not
// sweep from an existing database of the same GPU and kernels.
void write_db(const std::string& file, const std::vector<Winner>& winners, const Options& o,
              const cudaDeviceProp& prop, size_t problems) {
  std::vector<std::string> kept;
  std::ifstream in(file);
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    kgen::json::Value old;
    std::string error;
    const kgen::json::Value* hash = nullptr;
    if (kgen::json::parse(text.str(), &old, &error) && (hash = old.get("generator_hash")) &&
        hash->string == kgen_generator_hash() && old.get("entries")) {
      for (const kgen::json::Value& e : old.get("entries")->array) {
        const kgen::json::Value* fam = e.get("family");
        const kgen::json::Value* bucket = e.get("bucket");
        const kgen::json::Value* variant = e.get("variant");
        if (!fam || !bucket || !variant) continue;
        if (std::find(o.ops.begin(), o.ops.end(), fam->string) != o.ops.end()) continue;
        kept.push_back("{\"family\": " + json_string(fam->string) + ", \"bucket\": " +
                       json_string(bucket->string) + ", \"variant\": " + json_string(variant->string) + "}");
      }
      std::fprintf(stderr, "kgen-tune: kept %zu entries of other families from %s\n", kept.size(), file.c_str());
    }
  }
  for (const Winner& w : winners)
    kept.push_back("{\"family\": " + json_string(w.family) + ", \"bucket\": " + json_string(w.bucket) +
                   ", \"variant\": " + json_string(w.variant) + "}");
  std::sort(kept.begin(), kept.end());
  FILE* f = std::fopen(file.c_str(), "w");
  if (!f) {
    std::perror(file.c_str());
    std::exit(1);
  }
  std::fprintf(f, "{\n \"format\": %d,\n \"gpu\": %s,\n \"sm_count\": %d,\n \"arch\": \"sm_%d%d\",\n"
                  " \"generator_hash\": %s,\n \"library_version\": %s,\n \"commit\": %s,\n \"date\": %s,\n"
                  " \"budget_ms\": %g,\n \"problems\": %zu,\n \"entries\": [\n",
               kgen::tuning::kFormat, json_string(prop.name).c_str(), prop.multiProcessorCount, prop.major,
               prop.minor, json_string(kgen_generator_hash()).c_str(), json_string(kgen_version()).c_str(),
               json_string(commit()).c_str(), json_string(now_text()).c_str(), o.budget_ms, problems);
  for (size_t k = 0; k < kept.size(); ++k)
    std::fprintf(f, "  %s%s\n", kept[k].c_str(), k + 1 < kept.size() ? "," : "");
  std::fprintf(f, " ]\n}\n");
  std::fclose(f);
  std::fprintf(stderr, "kgen-tune: %zu winners in %s\n", kept.size(), file.c_str());
}

// `siblings`: a problem repeated in another mode times only the variants
// that could still be its bucket's entry (the sweep; the report times every
// variant for the oracle).
std::vector<Measured> measure_all(const Options& o, const std::string& dir, const cudaDeviceProp& prop,
                                  bool siblings) {
  std::vector<Measured> all;
  std::vector<int> sibling_of;
  for (const std::string& family : o.ops) {
    family_enum(family);
    const std::string file = dir + "/" + family + ".txt";
    const int offset = static_cast<int>(all.size());
    for (const Line& line : read_problems(file, family, o.dtypes)) {
      sibling_of.push_back(siblings && line.sibling >= 0 ? offset + line.sibling : -1);
      std::string error;
      Measured m;
      m.c = cases::make_case(family, line.dtype, line.words, prop, &error);
      if (!m.c) {
        std::fprintf(stderr, "kgen-tune: %s:%d: %s\n", file.c_str(), line.number, error.c_str());
        std::exit(2);
      }
      all.push_back(std::move(m));
    }
  }
  for (size_t k = 0; k < all.size(); ++k)
    if (sibling_of[k] >= 0) all[k].sibling = &all[sibling_of[k]];
  Progress progress;
  for (Measured& m : all) {
    // the candidates: the variants of the family and dtype; for the byte
    // movers, of the widest unit (an upper bound: the unit is known only
    // once the problem is simplified)
    const kgen::Family f = family_enum(m.c->family);
    size_t most = kgen::Registry::of(f, dtype_from_name(m.c->dtype)).size();
    for (int b = 1; b <= kgen::kMaxMovement; b *= 2)
      most = std::max(most, kgen::Registry::of(f, kgen::movement_key(b)).size());
    progress.total += static_cast<int64_t>(most);
  }
  for (Measured& m : all) measure(m, o, progress);
  return all;
}

int sweep(const Options& o, const cudaDeviceProp& prop) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Measured> all = measure_all(o, o.problems, prop, true);
  const std::string base = gpu_file_name(prop);
  write_csv(o.csv.empty() ? "kgen-tune-" + base + ".csv" : o.csv, all, prop);
  const std::vector<Winner> winners = pick_winners(all);
  write_db(o.db_dir + "/" + base + ".json", winners, o, prop, all.size());
  std::fprintf(stderr, "kgen-tune: sweep of %zu problems in %.0f s\n", all.size(), seconds_since(t0));
  return 0;
}

int report(const Options& o, const cudaDeviceProp& prop) {
  const char* db = kgen_tuning_database();
  std::vector<Measured> all = measure_all(o, o.heldout, prop, false);
  if (!o.csv.empty()) write_csv(o.csv, all, prop);
  std::ostringstream md;
  md << "# kgen-tune --report\n\nGPU: " << prop.name << " (" << prop.multiProcessorCount << " SMs), " << now_text()
     << ", commit " << commit() << ", kgen " << kgen_version() << " " << kgen_build_arch() << " level "
     << kgen_build_level() << ".\nTuning database: " << (*db ? db : "none") << ".\n"
     << "Held-out shapes (tuning/heldout/), none of them in the problem set; every compiled variant that\n"
     << "supports a shape timed (median over " << o.budget_ms << " ms); oracle = the fastest of them.\n"
     << "The tuned, heuristic and fastest few variants of each shape are timed again in 7 interleaved rounds\n"
     << "(their medians are the times here); tuned/heuristic is the median of the paired per-round ratios and\n"
     << "noise the half inter-quartile range of those ratios (of the heuristic's rounds when the two are one).\n\n"
     << "| family | dtype | problem | bucket | db entry | tuned us | heuristic us | oracle us | tuned/oracle | "
        "heuristic/oracle | tuned/heuristic | noise |\n|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  struct Sum {
    double log_to = 0, log_ho = 0, log_th = 0, worst_to = 0, worst_th = 0;
    int n = 0, beyond_noise = 0;
  };
  std::map<std::string, Sum> sums;
  char line[512];
  for (const Measured& m : all) {
    if (m.times.empty()) continue;
    const double oracle = m.best();
    auto time_of = [&](const std::string& v) {
      auto it = m.times.find(v);
      return it == m.times.end() ? 0.0 : it->second.median;
    };
    const double tuned = time_of(m.tuned), heur = time_of(m.heuristic);
    if (tuned <= 0 || heur <= 0) continue;
    // tuned against heuristic: paired over the confirmation rounds
    const Gain g = paired(m, m.tuned);
    const double tuned_heur = 1 / g.ratio, noise = m.tuned == m.heuristic ? m.spread : g.noise;
    Sum& s = sums[m.c->family];
    ++s.n;
    s.log_to += std::log(tuned / oracle);
    s.log_ho += std::log(heur / oracle);
    s.log_th += std::log(tuned_heur);
    s.worst_to = std::max(s.worst_to, tuned / oracle);
    s.worst_th = std::max(s.worst_th, tuned_heur);
    if (g.ratio < 1 - std::max(0.01, g.noise)) ++s.beyond_noise;
    std::snprintf(line, sizeof line, "| %s | %s | %s | %s | %s | %.1f | %.1f | %.1f | %.3f | %.3f | %.3f | %.1f%% |\n",
                  m.c->family.c_str(), m.c->dtype.c_str(), m.c->text.c_str(), m.bucket.c_str(), m.hit ? "yes" : "no",
                  tuned, heur, oracle, tuned / oracle, heur / oracle, tuned_heur, 100 * noise);
    md << line;
  }
  md << "\n| family | shapes | tuned/oracle geomean | worst | heuristic/oracle geomean | tuned/heuristic geomean | "
        "worst | tuned slower than heuristic beyond noise |\n|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& kv : sums) {
    const Sum& s = kv.second;
    std::snprintf(line, sizeof line, "| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %d |\n", kv.first.c_str(), s.n,
                  std::exp(s.log_to / s.n), s.worst_to, std::exp(s.log_ho / s.n), std::exp(s.log_th / s.n),
                  s.worst_th, s.beyond_noise);
    md << line;
  }
  std::printf("%s", md.str().c_str());
  if (!o.md.empty()) {
    std::ofstream out(o.md);
    out << md.str();
    if (!out) {
      std::perror(o.md.c_str());
      return 1;
    }
  }
  return 0;
}

// Reads every problem and held-out file and makes its cases (no GPU
// needed): a malformed line fails here, in the tests, not on the GPU.
int check(const Options& o) {
  cudaDeviceProp none{};
  int problems = 0, heldout = 0;
  for (const std::string& family : o.ops)
    for (int held = 0; held < 2; ++held) {
      const std::string file = (held ? o.heldout : o.problems) + "/" + family + ".txt";
      for (const Line& line : read_problems(file, family, o.dtypes)) {
        std::string error;
        if (!cases::make_case(family, line.dtype, line.words, none, &error)) {
          std::fprintf(stderr, "kgen-tune: %s:%d: %s\n", file.c_str(), line.number, error.c_str());
          return 1;
        }
        ++(held ? heldout : problems);
      }
    }
  std::printf("kgen-tune: %d problems and %d held-out shapes of %zu families parse\n", problems, heldout,
              o.ops.size());
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: kgen-tune [--ops F,...] [--dtypes f32,f16,bf16] [--budget-ms MS] [--problems DIR]\n"
               "                 [--db-dir DIR] [--csv FILE]\n"
               "       kgen-tune --report [--ops F,...] [--dtypes ...] [--budget-ms MS] [--heldout DIR]\n"
               "                 [--md FILE] [--csv FILE]\n"
               "       kgen-tune --check   (parse the problem and held-out files; no GPU needed)\n"
               "families: softmax softmax_backward reduce permute expand where topk\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool checking = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage());
      return argv[++i];
    };
    if (a == "--report") o.report = true;
    else if (a == "--check") checking = true;
    else if (a == "--ops") o.ops = split(value());
    else if (a == "--dtypes") o.dtypes = split(value());
    else if (a == "--budget-ms") o.budget_ms = std::atof(value().c_str());
    else if (a == "--problems") o.problems = value();
    else if (a == "--heldout") o.heldout = value();
    else if (a == "--db-dir") o.db_dir = value();
    else if (a == "--csv") o.csv = value();
    else if (a == "--md") o.md = value();
    else return usage();
  }
  for (const std::string& f : o.ops)
    if (std::find(kFamilies.begin(), kFamilies.end(), f) == kFamilies.end()) {
      std::fprintf(stderr, "kgen-tune: --ops: unknown family %s\n", f.c_str());
      return 2;
    }
  for (const std::string& d : o.dtypes)
    if (static_cast<int>(dtype_from_name(d)) < 0) {
      std::fprintf(stderr, "kgen-tune: --dtypes: unknown dtype %s\n", d.c_str());
      return 2;
    }
  if (checking) return check(o);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "kgen-tune: no CUDA device\n");
    return 77;
  }
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::fprintf(stderr, "kgen-tune: %s (%d SMs), kgen %s %s level %s, %lld variants, generator %s\n", prop.name,
               prop.multiProcessorCount, kgen_version(), kgen_build_arch(), kgen_build_level(),
               static_cast<long long>(kgen_variant_count()), kgen_generator_hash());
  return finish(o.report ? report(o, prop) : sweep(o, prop));
}
