#include "tuning/bucket.hpp"

#include <cstdio>

#include "broadcast/problem.hpp"
#include "permute/problem.hpp"
#include "reduce/problem.hpp"
#include "softmax/problem.hpp"
#include "topk/problem.hpp"

namespace kgen {
namespace tuning {

void bucket_of(Family family, const void* problem, char* out, int size) {
  switch (family) {
    case Family::softmax:
    case Family::softmax_backward: return softmax::bucket(problem, out, size);
    case Family::reduce: return reduce::bucket(problem, out, size);
    case Family::permute: return permute::bucket(problem, out, size);
    case Family::expand:
    case Family::where: return broadcast::bucket(problem, out, size);
    case Family::topk: return topk::bucket(problem, out, size);
  }
  std::snprintf(out, size, "unknown");
}

}  // namespace tuning
}  // namespace kgen
