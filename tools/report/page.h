// `tiletune report DB --html OUT`: one self-contained HTML page (inline CSS and SVG, no script,
// nothing fetched) of a solution database: a summary table, and per arch the speedup over the
// vendor, a roofline, the search convergence and the spread of the candidates (tools/report/plots.h).
// The page is also well-formed XML (XHTML syntax), so that any XML parser can check it.
#pragma once
#include <string>
#include <vector>

#include "tools/report/data.h"

namespace tiletune::report {

std::string render_html(const ReportData& data);

// Reads the database (read-only; older schemas too), renders it and writes `out_path` whole or not
// at all (a temporary file renamed over it). Throws Error naming the file that could not be read
// or written.
void write_report(const std::string& db_path, const std::string& out_path, const std::vector<std::string>& arches = {});

}  // namespace tiletune::report
