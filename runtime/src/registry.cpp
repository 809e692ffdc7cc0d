#include "registry.hpp"

#include <map>
#include <string>
#include <unordered_map>

namespace kgen {
namespace {


struct Index {
  std::vector<const VariantInfo*> all;
  std::vector<const VariantInfo*> by_family_element[kFamilies][kElementKeys];
  std::unordered_map<std::string_view, const VariantInfo*> by_name;

  Index() {
    all.assign(gen::kRegistry, gen::kRegistry + gen::kRegistrySize);
    for (const VariantInfo* v : all) {
      by_family_element[static_cast<int>(v->family)][v->element].push_back(v);
      by_name.emplace(v->name, v);
    }
  }
};

const Index& index() {
  static const Index idx;  // thread-safe initialisation (C++11 magic statics)
  return idx;
}

}  // namespace

const char* family_name(Family f) {
  switch (f) {
    case Family::softmax: return "softmax";
    case Family::reduce: return "reduce";
    case Family::permute: return "permute";
    case Family::expand: return "expand";
    case Family::where: return "where";
    case Family::topk: return "topk";
    case Family::softmax_backward: return "softmax_backward";
  }
  return "unknown";
}

const std::vector<const VariantInfo*>& Registry::all() { return index().all; }

const std::vector<const VariantInfo*>& Registry::of(Family family, int element) {
  return index().by_family_element[static_cast<int>(family)][element];
}

const VariantInfo* Registry::find(std::string_view name) {
  const auto& m = index().by_name;
  auto it = m.find(name);
  return it == m.end() ? nullptr : it->second;
}

}  // namespace kgen
