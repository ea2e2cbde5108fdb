#include "tools/report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/error.h"

namespace tiletune::report {
namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The code point of the UTF-8 sequence at s[i] and its length; length 0 when the bytes there are
// not UTF-8 (bad lead or continuation byte, overlong form, surrogate, beyond U+10FFFF).
std::pair<char32_t, std::size_t> decode(std::string_view s, std::size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  std::size_t n;
  char32_t cp;
  if (c < 0x80) return {c, 1};
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
  else return {0, 0};
  if (i + n > s.size()) return {0, 0};
  for (std::size_t k = 1; k < n; ++k) {
    const unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return {0, 0};
    cp = (cp << 6) | (cc & 0x3F);
  }
  const char32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
  return {cp, n};
}

// What XML 1.0 allows in a document (its production Char).
bool xml_char(char32_t cp) {
  return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) ||
         cp >= 0x10000;
}

std::string style_attrs(const Style& s) {
  std::string a = " fill=\"" + escape(s.fill) + "\" stroke=\"" + escape(s.stroke) + "\"";
  if (s.stroke != "none") a += " stroke-width=\"" + coord(s.stroke_width) + "\"";
  if (s.opacity < 1) a += " opacity=\"" + coord(s.opacity) + "\"";
  if (!s.dash.empty()) a += " stroke-dasharray=\"" + escape(s.dash) + "\"";
  return a;
}

}  // namespace

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto [cp, n] = decode(s, i);
    if (n == 0 || !xml_char(cp)) {
      out += kReplacement;
      i += n == 0 ? 1 : n;
      continue;
    }
    switch (cp) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string coord(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string short_number(double v) {
  if (std::isnan(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// ---- Scale ----------------------------------------------------------------------------------------

Scale Scale::linear(double lo, double hi) {
  if (lo == hi) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad, hi += pad;
  }
  return Scale(lo, hi, false);
}

Scale Scale::log(double lo, double hi) {
  if (!(lo > 0 && hi > 0) || !std::isfinite(lo) || !std::isfinite(hi))
    throw Error("a log scale needs positive finite bounds (got " + short_number(lo) + ", " + short_number(hi) + ")");
  if (lo > hi) std::swap(lo, hi);
  if (lo == hi) lo /= 2, hi *= 2;
  return Scale(lo, hi, true);
}

Scale& Scale::range(double a, double b) {
  a_ = a, b_ = b;
  return *this;
}

double Scale::operator()(double v) const {
  double t;
  if (log_) t = v > 0 ? (std::log10(v) - std::log10(lo_)) / (std::log10(hi_) - std::log10(lo_)) : 0;
  else t = (v - lo_) / (hi_ - lo_);
  return a_ + t * (b_ - a_);
}

std::vector<double> Scale::ticks() const {
  std::vector<double> out;
  if (!log_) {
    const double lo = std::min(lo_, hi_), hi = std::max(lo_, hi_);
    const double raw = (hi - lo) / 5;
    const int e = int(std::floor(std::log10(raw)));
    const double mag = std::pow(10.0, e);
    double f = 1;  // the step is f * 10^e, f the nice factor nearest raw
    for (double next : {2.0, 5.0, 10.0})
      if (raw / (f * mag) > 1.5) f = next;
    // k * f / 10^-e rather than a running sum: 0.6, not 0.6000000000000001.
    const double scale = std::pow(10.0, std::abs(e));
    auto tick = [&](double k) { return e >= 0 ? k * f * scale : k * f / scale; };
    for (double k = std::ceil(lo / tick(1)); tick(k) <= hi + tick(1) * 1e-9; ++k) out.push_back(tick(k) + 0.0);
    return out;
  }
  const int d0 = int(std::floor(std::log10(lo_))), d1 = int(std::ceil(std::log10(hi_)));
  const int every = std::max(1, (d1 - d0 + 7) / 8);  // at most ~8 decade ticks
  const double slack = 1e-9;
  auto inside = [&](double v) { return v >= lo_ * (1 - slack) && v <= hi_ * (1 + slack); };
  for (int d = d0; d <= d1; ++d)
    if (d % every == 0 && inside(std::pow(10.0, d))) out.push_back(std::pow(10.0, d));
  // Less than about a decade: mantissas 2 and 5, then every one, until there are three.
  for (const auto& mantissas : {std::vector<double>{1, 2, 5}, std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}}) {
    if (out.size() >= 3) break;
    out.clear();
    for (int d = d0; d <= d1; ++d)
      for (double m : mantissas)
        if (inside(m * std::pow(10.0, d))) out.push_back(m * std::pow(10.0, d));
  }
  return out;
}

const char* color(std::size_t i) {
  // Distinguishable on white and for the common colour-vision deficiencies (Okabe-Ito order).
  static const char* const kColors[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7",
                                        "#56b4e9", "#d55e00", "#f0e442", "#000000"};
  return kColors[i % std::size(kColors)];
}

// ---- Svg ----------------------------------------------------------------------------------------

Svg::Svg(double width, double height, std::string_view label)
    : width_(width), height_(height), label_(label) {}

void Svg::shape(const std::string& open, const Style& s, std::string_view tip) {
  body_ += open + style_attrs(s);
  if (tip.empty()) {
    body_ += "/>\n";
    return;
  }
  const std::string name = open.substr(1, open.find(' ') - 1);
  body_ += "><title>" + escape(tip) + "</title></" + name + ">\n";
}

void Svg::line(double x1, double y1, double x2, double y2, const Style& s, std::string_view tip) {
  shape("<line x1=\"" + coord(x1) + "\" y1=\"" + coord(y1) + "\" x2=\"" + coord(x2) + "\" y2=\"" + coord(y2) + "\"", s,
        tip);
}

void Svg::rect(double x, double y, double w, double h, const Style& s, std::string_view tip) {
  if (w < 0) x += w, w = -w;
  if (h < 0) y += h, h = -h;
  shape("<rect x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" width=\"" + coord(w) + "\" height=\"" + coord(h) + "\"",
        s, tip);
}

void Svg::circle(double cx, double cy, double r, const Style& s, std::string_view tip) {
  shape("<circle cx=\"" + coord(cx) + "\" cy=\"" + coord(cy) + "\" r=\"" + coord(r) + "\"", s, tip);
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, const Style& s, std::string_view tip) {
  std::string p;
  for (const auto& [x, y] : points) p += (p.empty() ? "" : " ") + coord(x) + "," + coord(y);
  shape("<polyline points=\"" + p + "\"", s, tip);
}

void Svg::text(double x, double y, std::string_view s, Anchor anchor, double size, double rotate) {
  static const char* const kAnchors[] = {"start", "middle", "end"};
  body_ += "<text x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" font-size=\"" + coord(size) + "\" text-anchor=\"" +
           kAnchors[int(anchor)] + "\"";
  if (rotate != 0) body_ += " transform=\"rotate(" + coord(rotate) + " " + coord(x) + " " + coord(y) + ")\"";
  body_ += ">" + escape(s) + "</text>\n";
}

std::string Svg::str() const {
  // viewBox and a width: the plot scales down on a narrow window and keeps its proportions.
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + coord(width_) + " " + coord(height_) +
         "\" width=\"" + coord(width_) + "\" role=\"img\" aria-label=\"" + escape(label_) +
         "\" font-family=\"sans-serif\">\n<title>" + escape(label_) + "</title>\n" + body_ + "</svg>\n";
}

// ---- Plot ---------------------------------------------------------------------------------------

Plot::Plot(double width, double height, Margins m, Scale x, Scale y, std::string_view title)
    : svg_(width, height, title), m_(m), x_(x), y_(y) {
  x_.range(left(), right());
  y_.range(bottom(), top());
  svg_.text(left(), m_.top - 10, title, Anchor::Start, 13);
}

void Plot::axes(std::string_view x_label, std::string_view y_label, bool y_ticks) {
  const Style grid{"none", "#dddddd", 1};
  const Style frame{"none", "#444444", 1};
  for (double t : x_.ticks()) {
    svg_.line(x(t), top(), x(t), bottom(), grid);
    svg_.text(x(t), bottom() + 14, short_number(t), Anchor::Middle, 10);
  }
  if (y_ticks)
    for (double t : y_.ticks()) {
      svg_.line(left(), y(t), right(), y(t), grid);
      svg_.text(left() - 4, y(t) + 3.5, short_number(t), Anchor::End, 10);
    }
  svg_.rect(left(), top(), right() - left(), bottom() - top(), frame);
  svg_.text((left() + right()) / 2, svg_.height() - 8, x_label, Anchor::Middle, 11);
  if (!y_label.empty()) svg_.text(14, (top() + bottom()) / 2, y_label, Anchor::Middle, 11, -90);
}

void Plot::row_labels(const std::vector<std::string>& labels) {
  for (std::size_t i = 0; i < labels.size(); ++i)
    svg_.text(left() - 6, y(double(i) + 0.5) + 3.5, labels[i], Anchor::End, 10);
}

void Plot::legend(const std::vector<LegendEntry>& entries, bool bottom_right) {
  if (entries.empty()) return;
  std::size_t longest = 0;
  for (const auto& e : entries) longest = std::max(longest, e.label.size());
  const double row = 15, w = 34 + 6.2 * double(std::min<std::size_t>(longest, 60)), h = row * double(entries.size()) + 6;
  const double x0 = right() - w - 6, y0 = bottom_right ? bottom() - h - 6 : top() + 6;
  svg_.rect(x0, y0, w, h, Style{"#ffffff", "#999999", 1, 0.9});
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const double cy = y0 + 3 + row * (double(i) + 0.5);
    const LegendEntry& e = entries[i];
    if (e.point) svg_.circle(x0 + 14, cy, 4, e.style);
    else svg_.line(x0 + 6, cy, x0 + 22, cy, e.style);
    svg_.text(x0 + 28, cy + 3.5, e.label, Anchor::Start, 10);
  }
}

}  // namespace tiletune::report
