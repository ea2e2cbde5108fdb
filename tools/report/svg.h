// A small SVG writer for `tiletune report`: scales (linear, log), axes with ticks and grid, and
// the shapes the report's plots are made of. Output is inline SVG for an HTML page, also
// well-formed XML. Every text that reaches the output goes through escape(): labels and tooltips
// come from a database, which is untrusted input.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tiletune::report {

// For XML/HTML text and attribute values: & < > " ' as entities; control characters XML 1.0 does
// not allow, and bytes that are not UTF-8, as U+FFFD (a database may hold any bytes in a TEXT).
std::string escape(std::string_view s);

// A number for a coordinate or an attribute: at most two decimals, no exponent, no "-0".
std::string coord(double v);
// A number for a tick or a table: 3 significant digits ("0.25", "12.5", "1.2e+05").
std::string short_number(double v);

// Maps a domain [lo, hi] of data onto a range [a, b] of pixels (a > b for a y axis).
class Scale {
 public:
  // lo == hi is widened so that the value sits in the middle; lo > hi is a reversed axis (lo still
  // maps to the range's first end).
  static Scale linear(double lo, double hi);
  // lo and hi must be > 0 (Error otherwise); equal ones are widened to a factor of 2 each way.
  static Scale log(double lo, double hi);
  Scale& range(double a, double b);

  // Pixels; a value <= 0 on a log scale maps to the low end.
  double operator()(double v) const;
  bool is_log() const { return log_; }
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  // 3 to ~10 values inside [lo, hi]: steps of 1, 2 or 5 times a power of ten (linear); powers of
  // ten, or 1-2-5 within a decade when the domain spans less than one (log).
  std::vector<double> ticks() const;

 private:
  Scale(double lo, double hi, bool log) : lo_(lo), hi_(hi), log_(log) {}
  double lo_, hi_;
  bool log_;
  double a_ = 0, b_ = 1;
};

// The report's series colours, cycled.
const char* color(std::size_t i);

struct Style {
  std::string fill = "none";
  std::string stroke = "none";
  double stroke_width = 1;
  double opacity = 1;
  std::string dash;  // stroke-dasharray, "" for solid
};

enum class Anchor { Start, Middle, End };

// One <svg> element. `tip` arguments become a <title> child: the browser's tooltip, no script.
class Svg {
 public:
  Svg(double width, double height, std::string_view label);
  double width() const { return width_; }
  double height() const { return height_; }

  void line(double x1, double y1, double x2, double y2, const Style& s, std::string_view tip = {});
  void rect(double x, double y, double w, double h, const Style& s, std::string_view tip = {});
  void circle(double cx, double cy, double r, const Style& s, std::string_view tip = {});
  void polyline(const std::vector<std::pair<double, double>>& points, const Style& s, std::string_view tip = {});
  // rotate: degrees about (x, y), e.g. -90 for a y axis label.
  void text(double x, double y, std::string_view s, Anchor anchor = Anchor::Start, double size = 11,
            double rotate = 0);
  std::string str() const;  // the whole element

 private:
  void shape(const std::string& open, const Style& s, std::string_view tip);
  double width_, height_;
  std::string label_, body_;
};

struct LegendEntry {
  std::string label;
  Style style;
  bool point = false;  // a marker; otherwise a line sample
};

// A plot: an Svg with a rectangle for the data, margins for the axes, and scales mapping data into
// that rectangle.
class Plot {
 public:
  struct Margins {
    double left = 64, right = 16, top = 28, bottom = 44;
  };
  Plot(double width, double height, Margins m, Scale x, Scale y, std::string_view title);

  Svg& svg() { return svg_; }
  const Scale& xs() const { return x_; }
  const Scale& ys() const { return y_; }
  double x(double v) const { return x_(v); }
  double y(double v) const { return y_(v); }
  double left() const { return m_.left; }
  double right() const { return svg_.width() - m_.right; }
  double top() const { return m_.top; }
  double bottom() const { return svg_.height() - m_.bottom; }

  // Frame, grid lines and tick labels; y_ticks false for an axis of categories (row_labels).
  void axes(std::string_view x_label, std::string_view y_label, bool y_ticks = true);
  // Labels of rows 0..n-1 centred at y(i + 0.5), right-aligned left of the frame (with a y scale
  // linear(n, 0), row 0 is the top one).
  void row_labels(const std::vector<std::string>& labels);
  // A box of entries in the top-right (or bottom-right) corner of the data rectangle.
  void legend(const std::vector<LegendEntry>& entries, bool bottom_right = false);
  std::string str() const { return svg_.str(); }

 private:
  Svg svg_;
  Margins m_;
  Scale x_, y_;
};

}  // namespace tiletune::report
