// The report's plots of one arch, each an inline <svg> element (tools/report/svg.h); "" when the
// arch has nothing to plot (the page then says why). docs/report.md says how to read them.
#pragma once
#include <map>
#include <string>

#include "tools/report/data.h"

namespace tiletune::report {

// Per problem, the vendor's time over the best kernel's, as a bar from 1 (log scale).
std::string speedup_plot(const ArchResult& a);
// Per problem, the best kernel's and the vendor's FLOP/s against arithmetic intensity, under the
// device's roofs (where the peak table knows the device).
std::string roofline_plot(const ArchResult& a);
// Per problem and sweep, the best time found so far (over the best kernel's) against the number of
// candidates measured; one colour per sweep, labelled with its search settings where recorded.
std::string convergence_plot(const ArchResult& a, const std::map<std::string, std::string>& searches);
// Per problem, every candidate's time over the best kernel's: quartile box, range, the points.
std::string spread_plot(const ArchResult& a);

// At most `max_points` of the sorted values, evenly spaced in rank (first and last kept): the
// strip plot's points of a problem with thousands of candidates.
std::vector<double> thin_sorted(const std::vector<double>& sorted, std::size_t max_points);
// The q-quantile (0..1) of sorted values, interpolated between ranks; NaN when empty.
double quantile(const std::vector<double>& sorted, double q);

}  // namespace tiletune::report
