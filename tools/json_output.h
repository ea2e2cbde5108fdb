// `--json`: every command that takes it prints one JSON document on stdout (progress and
// diagnostics stay on stderr). docs/cli-json.md describes the documents; their keys are stable:
// keys are added, never renamed or removed, without a new "schema" number.
#pragma once
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace tiletune::tools {

// Ordered: a document's keys print in the order they were written ("command" first).
using Json = nlohmann::ordered_json;

// The "schema" of every document: bumped when a key changes meaning or goes away.
inline constexpr int kJsonSchema = 1;

// Adds --json to a command.
void add_json_flag(CLI::App* cmd, bool& json);

// A document's first keys: {"command": "db winners", "schema": 1, "exit_code": 0}.
Json json_document(const CLI::App& cmd, int exit_code);

// Prints the document on stdout, indented, and a newline.
void print_json(const Json& doc);

// A measured number, or null where it was not measured (NaN, infinite, or negative: the markers
// the tuner and the database use for "none").
Json number_or_null(double v);

// How main() reports a command that threw: "tiletune: <what>: <message>" on stderr and, where the
// command line asked for --json, {"command", "schema", "exit_code", "error": message} on stdout.
// Returns exit_code.
int report_failure(const CLI::App& app, const char* what, const std::string& message, int exit_code);

}  // namespace tiletune::tools
