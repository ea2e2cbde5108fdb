// `tiletune import`: a workload's logged GEMMs and convolutions as a tuning config (tools/import/).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include <unistd.h>

#include "common/error.h"
#include "tools/commands.h"
#include "tools/import/config_writer.h"
#include "tools/import/formats.h"

namespace tiletune::tools {

namespace {

struct ImportArgs {
  std::vector<std::string> files, templates;
  std::string output, format = "auto", name = "imported";
  bool tf32 = false, force = false, strict = false;
};

void write_whole(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::ofstream out(tmp, std::ios::trunc);
  out << text;
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {  // a reader sees the old file or the new one
    std::remove(tmp.c_str());
    throw Error("cannot write " + path);
  }
}

int run_import(const ImportArgs& a) {
  std::error_code ec;
  if (std::filesystem::exists(a.output, ec) && !a.force)
    throw Error(a.output + " exists (a config of its own?); --force overwrites it");
  std::optional<imports::Format> format;
  if (a.format != "auto") format = imports::format_from_string(a.format);
  imports::ImportOptions options;
  options.tf32 = a.tf32;
  imports::Workload workload;
  std::size_t skipped = 0;
  for (const std::string& file : a.files) {
    const imports::FileReport r = imports::import_file(file, format ? &*format : nullptr, options, workload);
    std::fputs(r.summary().c_str(), stderr);
    skipped += r.skipped_count();
  }
  if (a.strict && skipped > 0)
    throw Error("--strict: " + std::to_string(skipped) + " lines or events were skipped (above); nothing written");
  imports::ConfigMeta meta;
  meta.name = a.name;
  meta.files = a.files;
  meta.templates = a.templates;
  write_whole(a.output, imports::config_text(workload, meta));
  std::size_t convs = 0;
  for (const auto& e : workload.entries()) convs += e.problem.is_conv();
  std::printf("wrote %s: %zu problems (%zu GEMMs, %zu convolutions) from %lld calls\n", a.output.c_str(),
              workload.entries().size(), workload.entries().size() - convs, convs,
              static_cast<long long>(workload.calls()));
  return kExitOk;
}

}  // namespace

Run add_import(CLI::App& app) {
  auto a = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "import", "workload logs -> tuning config: the GEMMs and convolutions a program ran (rocBLAS and hipBLASLt bench "
                "logs, PyTorch TunableOp files, PyTorch profiler traces), each once with how often it ran (docs/import.md)");
  cmd->add_option("files", a->files, "logs to read; each file's format is told from its content unless --format names it")
      ->required();
  cmd->add_option("-o,--output", a->output, "tuning config to write")->required();
  std::string formats = "auto";
  for (const std::string& f : imports::format_names()) formats += " | " + f;
  std::vector<std::string> allowed = imports::format_names();
  allowed.push_back("auto");
  cmd->add_option("--format", a->format, "format of every file: " + formats)
      ->check(CLI::IsMember(allowed))
      ->capture_default_str();
  cmd->add_option("--name", a->name, "the config's name")->capture_default_str();
  cmd->add_option("--template", a->templates,
                  "tune with this template (repeatable; default: every builtin template, as a config without "
                  "\"templates\")");
  cmd->add_flag("--tf32", a->tf32,
                "f32 GEMMs whose log does not name a compute type (TunableOp files, PyTorch traces) are computed in "
                "tf32, as PyTorch runs them under torch.backends.cuda.matmul.allow_tf32");
  cmd->add_flag("--force", a->force, "overwrite the output file if it exists");
  cmd->add_flag("--strict", a->strict, "fail, writing nothing, when any line or event is skipped");
  return [a] { return run_import(*a); };
}

}  // namespace tiletune::tools
