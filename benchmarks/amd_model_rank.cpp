// The analytical model's estimate of every candidate of one template (mfma_gemm by default) on
// every shape of a shapes file, for an AMD arch assumed from the arch table: no device needed.
// Prints one JSON document: {"arch", "template", "problems": [{"name", "m", "n", "k", "trans_a",
// "trans_b", "candidates": [{"params", "seconds", the model's terms...}]}]}.
// benchmarks/amd_model_vs_origami.py compares these rankings with hipBLASLt's origami.
#include <cstdio>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "gpu/backend_traits.h"
#include "solutions/kernel_template.h"
#include "solutions/model.h"
#include "tuner/enumerator.h"

using namespace tiletune;

int main(int argc, char** argv) {
  CLI::App app("the AMD analytical model's estimates of a template's candidates, as JSON");
  std::string arch, shapes_file, template_name = "mfma_gemm", dtype = "bf16";
  app.add_option("--arch", arch, "AMD arch (gfx90a, gfx942, gfx950)")->required();
  app.add_option("--shapes", shapes_file, "shapes file (configs/shapes/gemm.json format)")->required();
  app.add_option("--template", template_name, "kernel template")->capture_default_str();
  app.add_option("--dtype", dtype, "input type (bf16, f16, f32); the output type is the same")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    std::ifstream in(shapes_file);
    if (!in) throw Error("cannot read " + shapes_file);
    nlohmann::json shapes;
    try {
      shapes = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw Error(shapes_file + ": not JSON: " + e.what());
    }
    if (!shapes.contains("shapes") || !shapes["shapes"].is_array()) throw Error(shapes_file + ": no \"shapes\" list");

    gpu::DeviceInfo dev;
    dev.backend = gpu::BackendKind::Hip;
    dev.arch = arch;
    gpu::traits(dev.backend).assume_from_arch(dev, false);
    const KernelTemplate& t = find_template(template_name);
    const DataType type = dtype_from_string(dtype);

    nlohmann::ordered_json out = {{"arch", arch}, {"template", template_name}, {"dtype", dtype},
                                  {"compute_units", dev.multiprocessors}, {"problems", nlohmann::json::array()}};
    for (const auto& s : shapes["shapes"]) {
      GemmProblem p;
      p.a_type = p.c_type = type;
      p.trans_a = s.at("transA").get<std::string>() == "T";
      p.trans_b = s.at("transB").get<std::string>() == "T";
      p.m = s.at("m"), p.n = s.at("n"), p.k = s.at("k");
      p = p.canonical();
      const tuner::Enumeration en = tuner::enumerate({t}, {p}, dev);
      nlohmann::ordered_json cands = nlohmann::json::array();
      for (const auto& c : en.candidates) {
        const ModelEstimate e = model_estimate(t, c.solution, p, dev);
        if (!e.has_model) continue;
        cands.push_back({{"params", c.solution.params},
                         {"seconds", e.seconds},
                         {"schedule_seconds", e.schedule_seconds},
                         {"traffic_seconds", e.traffic_seconds},
                         {"math_seconds", e.math_seconds},
                         {"operand_seconds", e.operand_seconds},
                         {"load_seconds", e.load_seconds},
                         {"latency_seconds", e.latency_seconds},
                         {"dram_seconds", e.dram_seconds},
                         {"tile_seconds", e.tile_seconds},
                         {"steps", e.steps},
                         {"tiles", e.tiles},
                         {"workgroups_per_cu", e.blocks_per_mp},
                         {"resident", e.resident},
                         {"wave_factor", e.wave_factor}});
      }
      out["problems"].push_back({{"name", s.value("name", "")}, {"m", p.m}, {"n", p.n}, {"k", p.k},
                                 {"trans_a", p.trans_a}, {"trans_b", p.trans_b}, {"candidates", cands}});
    }
    std::cout << out.dump() << "\n";
  } catch (const Error& e) {
    std::fprintf(stderr, "amd_model_rank: %s\n", e.what());
    return 1;
  }
  return 0;
}
