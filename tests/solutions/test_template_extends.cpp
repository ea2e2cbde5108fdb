// A template JSON's "extends" (solutions/template_extends.h): what a child inherits, what it
// overrides and in which order the merged keys come, the errors for bad parents, and a merged
// spec loading as a template.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "solutions/kernel_template.h"
#include "solutions/template_extends.h"
#include "tests/test_util.h"

namespace tiletune {
namespace {

using Json = nlohmann::ordered_json;

const char* const kParent = R"({
  "name": "base_gemm", "source": "base.cuh", "backends": ["cuda"], "instance": "base<BM, BK>",
  "repack": true,
  "parameters": {"BM": [64, 128], "BK": [32, 64], "STAGES": [2, 3]},
  "default": {"BM": 64, "BK": 32, "STAGES": 2},
  "derived": [["THREADS", "BM * 2"]],
  "model": {"about": "the parent's notes", "tile_m": "BM", "tile_n": "BM", "tile_k": "BK", "threads": "THREADS"},
  "launch": {"block": "THREADS", "grid_x": "(M + BM - 1) / BM", "grid_y": "1", "grid_z": "BATCH", "shared_bytes": "0"},
  "constraints": {"fits": "THREADS <= DEV_MAX_THREADS", "deep": "BK <= K"}
})";

std::map<std::string, std::string> files(const std::map<std::string, std::string>& more = {}) {
  std::map<std::string, std::string> f = {{"base.json", kParent}, {"base.cuh", "// kernel"}};
  for (const auto& [name, text] : more) f[name] = text;
  return f;
}

Json resolved(const std::string& child, const std::map<std::string, std::string>& f = files()) {
  return resolve_extends("dir/child.json", Json::parse(child), f);
}

std::vector<std::string> keys(const Json& object) {
  std::vector<std::string> out;
  for (const auto& [key, value] : object.items()) out.push_back(key);
  return out;
}

TEST(TemplateExtends, InheritsWhatTheChildLeavesOut) {
  const Json j = resolved(R"({"extends": "base.json", "name": "child"})");
  const Json parent = Json::parse(kParent);
  EXPECT_FALSE(j.contains("extends"));
  EXPECT_EQ(j.at("name"), "child");
  for (const char* key : {"source", "backends", "instance", "repack", "parameters", "default", "derived", "model", "launch",
                          "constraints"})
    EXPECT_EQ(j.at(key), parent.at(key)) << key;
}

TEST(TemplateExtends, ChildValuesOverrideObjectsMergeNullRemoves) {
  const Json j = resolved(R"({"extends": "./base.json", "name": "child", "problem": "conv", "repack": null,
      "parameters": {"BK": [64], "SPLIT": [1, 2]},
      "derived": [["THREADS", "256"]],
      "model": {"about": "the child's notes", "tile_n": null},
      "constraints": {"conv_only": "CONV_R == 1", "deep": "BK * 2 <= K", "fits": null}})");
  EXPECT_EQ(j.at("problem"), "conv");
  EXPECT_FALSE(j.contains("repack"));
  // A key both give keeps the parent's place; a key only the child has comes first.
  EXPECT_EQ(keys(j.at("parameters")), (std::vector<std::string>{"SPLIT", "BM", "BK", "STAGES"}));
  EXPECT_EQ(j.at("parameters").at("BK"), Json::parse("[64]"));  // arrays are replaced, not merged
  EXPECT_EQ(j.at("parameters").at("BM"), Json::parse("[64, 128]"));
  EXPECT_EQ(j.at("derived"), Json::parse(R"([["THREADS", "256"]])"));
  EXPECT_EQ(j.at("model").at("about"), "the child's notes");
  EXPECT_FALSE(j.at("model").contains("tile_n"));
  EXPECT_EQ(j.at("model").at("tile_k"), "BK");
  EXPECT_EQ(keys(j.at("constraints")), (std::vector<std::string>{"conv_only", "deep"}));
  EXPECT_EQ(j.at("constraints").at("deep"), "BK * 2 <= K");
  EXPECT_EQ(j.at("launch"), Json::parse(kParent).at("launch"));
}

TEST(TemplateExtends, ChainsOfParents) {
  const auto f = files({{"middle.json", R"({"extends": "base.json", "name": "middle", "default": {"BM": 128}})"}});
  const Json j = resolved(R"({"extends": "middle.json", "name": "child", "constraints": {"own": "BM > 0"}})", f);
  EXPECT_EQ(j.at("default").at("BM"), 128);
  EXPECT_EQ(j.at("default").at("BK"), 32);
  EXPECT_EQ(keys(j.at("constraints")), (std::vector<std::string>{"own", "fits", "deep"}));
}

TEST(TemplateExtends, WithoutExtendsTheSpecIsUnchanged) {
  const Json spec = Json::parse(kParent);
  EXPECT_EQ(resolve_extends("base.json", spec, files()), spec);
}

TEST(TemplateExtends, RefusesBadParentsNamingTheCause) {
  auto error = [](const std::string& child, const std::map<std::string, std::string>& f = files()) {
    return testing::error_of([&] { resolved(child, f); });
  };
  auto contains = [](const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; };
  std::string e = error(R"({"extends": "/work/base.json", "name": "c"})");
  EXPECT_TRUE(contains(e, "dir/child.json") && contains(e, "absolute path")) << e;
  e = error(R"({"extends": "../kernel_templates/base.json", "name": "c"})");
  EXPECT_TRUE(contains(e, "not a file of the templates' folder")) << e;
  e = error(R"({"extends": "sub/base.json", "name": "c"})");
  EXPECT_TRUE(contains(e, "not a file of the templates' folder")) << e;
  e = error(R"({"extends": "missing.json", "name": "c"})");
  EXPECT_TRUE(contains(e, "no template missing.json")) << e;
  e = error(R"({"extends": 3, "name": "c"})");
  EXPECT_TRUE(contains(e, "must be a file name")) << e;
  e = error(R"({"extends": "base.json"})");
  EXPECT_TRUE(contains(e, "needs its own \"name\"")) << e;
  e = error(R"({"extends": "base.json", "name": "base_gemm"})");
  EXPECT_TRUE(contains(e, "has the name of the template it extends")) << e;
  e = error(R"({"extends": "base.cuh", "name": "c"})");
  EXPECT_TRUE(contains(e, "base.cuh")) << e;  // not JSON
  e = error(R"({"extends": "child.json", "name": "c"})");  // itself
  EXPECT_TRUE(contains(e, "cycle: child.json -> child.json")) << e;
  const auto loop = files({{"a.json", R"({"extends": "b.json", "name": "a"})"}, {"b.json", R"({"extends": "a.json", "name": "b"})"}});
  e = error(R"({"extends": "a.json", "name": "c"})", loop);
  EXPECT_TRUE(contains(e, "cycle: child.json -> a.json -> b.json -> a.json")) << e;
}

// A convolution template may extend a GEMM one: the merged spec is checked as any template is.
TEST(TemplateExtends, MergedSpecLoadsAsATemplate) {
  static const std::map<std::string, std::string> f = files();
  const KernelTemplate t = KernelTemplate::from_json(
      resolved(R"({"extends": "base.json", "name": "child", "problem": "conv", "arguments": "conv", "repack": false,
                   "parameters": {"BK": [64]}, "constraints": {"one_by_one": "CONV_R == 1"}})",
               f),
      &f);
  EXPECT_EQ(t.name(), "child");
  EXPECT_EQ(t.problem_kind(), ProblemKind::Conv);
  EXPECT_FALSE(t.offers_repack());
  ASSERT_EQ(t.parameters().size(), 3u);
  EXPECT_EQ(t.parameters()[1].first, "BK");
  EXPECT_EQ(t.parameters()[1].second, std::vector<std::int64_t>{64});
  EXPECT_TRUE(t.has_model());
  // A child that turns the GEMM parent into a convolution must say how its arguments are built.
  const std::string e = testing::error_of([&] {
    KernelTemplate::from_json(resolved(R"({"extends": "base.json", "name": "child", "problem": "conv"})", f), &f);
  });
  EXPECT_NE(e.find("\"arguments\""), std::string::npos) << e;
}

}  // namespace
}  // namespace tiletune
