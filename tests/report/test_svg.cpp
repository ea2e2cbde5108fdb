// The report's SVG writer: escaping of untrusted text, number formatting, scales and their ticks,
// and that what it writes parses as XML.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/error.h"
#include "tests/report/xml_check.h"
#include "tools/report/plots.h"
#include "tools/report/svg.h"

using namespace tiletune;
using namespace tiletune::report;

TEST(SvgEscape, MarkupCharactersBecomeEntities) {
  EXPECT_EQ(escape(R"(<script>alert("x" & 'y')</script>)"),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;");
  EXPECT_EQ(escape("gemm|f32>f32|NN|m40"), "gemm|f32&gt;f32|NN|m40");
  EXPECT_EQ(escape(""), "");
}

TEST(SvgEscape, KeepsUtf8AndReplacesWhatXmlCannotHold) {
  EXPECT_EQ(escape("\xC3\xA9t\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80"), "\xC3\xA9t\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80");
  EXPECT_EQ(escape("tab\tnl\n"), "tab\tnl\n");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(escape(std::string("a\0b", 3)), "a" + fffd + "b");  // NUL
  EXPECT_EQ(escape("a\x01\x1F" "b"), "a" + fffd + fffd + "b");      // other C0 controls
  EXPECT_EQ(escape("\xFF"), fffd);                                    // never a UTF-8 byte
  EXPECT_EQ(escape("\xC3"), fffd);                                    // truncated sequence
  EXPECT_EQ(escape("\xC0\xBC"), fffd + fffd);                         // overlong '<'
  EXPECT_EQ(escape("\xED\xA0\x80"), fffd + fffd + fffd);              // a surrogate
  EXPECT_EQ(escape("\xEF\xBF\xBE"), fffd);                            // U+FFFE, not an XML Char
}

TEST(SvgNumbers, CoordinatesAreShortAndFinite) {
  EXPECT_EQ(coord(12.0), "12");
  EXPECT_EQ(coord(12.345), "12.35");  // 12.345 is stored a little above
  EXPECT_EQ(coord(0.5), "0.5");
  EXPECT_EQ(coord(-0.001), "0");
  EXPECT_EQ(coord(NAN), "0");
  EXPECT_EQ(coord(INFINITY), "0");
  EXPECT_EQ(short_number(0.25), "0.25");
  EXPECT_EQ(short_number(123456), "1.23e+05");
  EXPECT_EQ(short_number(NAN), "-");
}

TEST(SvgScale, LinearMapsEndsAndMiddle) {
  Scale s = Scale::linear(0, 10);
  s.range(100, 200);
  EXPECT_DOUBLE_EQ(s(0), 100);
  EXPECT_DOUBLE_EQ(s(10), 200);
  EXPECT_DOUBLE_EQ(s(2.5), 125);
  Scale y = Scale::linear(0, 10);
  y.range(300, 0);  // a y axis: up is smaller
  EXPECT_DOUBLE_EQ(y(0), 300);
  EXPECT_DOUBLE_EQ(y(10), 0);
  Scale rows = Scale::linear(4, 0);  // reversed: row 0 at the top
  rows.range(300, 0);
  EXPECT_DOUBLE_EQ(rows(0), 0);
  EXPECT_DOUBLE_EQ(rows(4), 300);
  EXPECT_EQ(rows.ticks(), Scale::linear(0, 4).ticks());
}

TEST(SvgScale, LogMapsDecadesEvenly) {
  Scale s = Scale::log(1, 1000);
  s.range(0, 300);
  EXPECT_NEAR(s(1), 0, 1e-9);
  EXPECT_NEAR(s(10), 100, 1e-9);
  EXPECT_NEAR(s(100), 200, 1e-9);
  EXPECT_NEAR(s(1000), 300, 1e-9);
  EXPECT_NEAR(s(0), 0, 1e-9);  // not a number on a log axis: the low end, not NaN
  EXPECT_NEAR(s(-5), 0, 1e-9);
}

TEST(SvgScale, DegenerateDomainsAreWidened) {
  Scale l = Scale::log(4, 4);
  EXPECT_DOUBLE_EQ(l.lo(), 2);
  EXPECT_DOUBLE_EQ(l.hi(), 8);
  Scale z = Scale::linear(0, 0);
  EXPECT_LT(z.lo(), 0);
  EXPECT_GT(z.hi(), 0);
  EXPECT_THROW(Scale::log(0, 10), Error);
  EXPECT_THROW(Scale::log(-1, 10), Error);
  EXPECT_THROW(Scale::log(1, INFINITY), Error);
}

TEST(SvgScale, LinearTicksAreNiceSteps) {
  EXPECT_EQ(Scale::linear(0, 10).ticks(), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(Scale::linear(0, 1).ticks(), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1}));
  const std::vector<double> t = Scale::linear(-3, 47).ticks();
  ASSERT_FALSE(t.empty());
  EXPECT_DOUBLE_EQ(t.front(), 0);
  EXPECT_DOUBLE_EQ(t[1] - t[0], 10);
  for (double v : t) EXPECT_TRUE(v >= -3 && v <= 47) << v;
}

TEST(SvgScale, LogTicks) {
  EXPECT_EQ(Scale::log(1, 1000).ticks(), (std::vector<double>{1, 10, 100, 1000}));
  EXPECT_EQ(Scale::log(0.5, 30).ticks(), (std::vector<double>{0.5, 1, 2, 5, 10, 20}));  // 2 decade ticks: too few
  // Less than a decade: 1-2-5, then every mantissa.
  EXPECT_EQ(Scale::log(1, 6).ticks(), (std::vector<double>{1, 2, 5}));
  EXPECT_EQ(Scale::log(1.1, 4.5).ticks(), (std::vector<double>{2, 3, 4}));
  // Twenty decades: every third, at most about eight ticks.
  const std::vector<double> wide = Scale::log(1e-10, 1e10).ticks();
  EXPECT_LE(wide.size(), 8u);
  EXPECT_GE(wide.size(), 3u);
}

TEST(SvgStats, QuantilesAndThinning) {
  const std::vector<double> v{1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(quantile(v, 0), 1);
  EXPECT_DOUBLE_EQ(quantile(v, 0.5), 3);
  EXPECT_DOUBLE_EQ(quantile(v, 0.25), 2);
  EXPECT_DOUBLE_EQ(quantile(v, 1), 5);
  EXPECT_DOUBLE_EQ(quantile({1, 2}, 0.5), 1.5);
  EXPECT_TRUE(std::isnan(quantile({}, 0.5)));
  std::vector<double> many;
  for (int i = 0; i < 1000; ++i) many.push_back(i);
  const std::vector<double> t = thin_sorted(many, 10);
  ASSERT_EQ(t.size(), 10u);
  EXPECT_EQ(t.front(), 0);
  EXPECT_EQ(t.back(), 999);
  EXPECT_EQ(thin_sorted(v, 10), v);
}

TEST(SvgWriter, ShapesTooltipsAndTextAreWellFormed) {
  Plot p(400, 300, Plot::Margins{}, Scale::log(1, 100), Scale::linear(0, 5), "title <&> \"q\"");
  p.axes("x </svg>", "y");
  p.svg().rect(10, 10, -5, 20, Style{"red"}, "tip <b>&");  // negative width: drawn from x - 5
  p.svg().circle(1, 2, 3, Style{"none", "blue", 2, 0.5, "2 2"});
  p.svg().polyline({{0, 0}, {1.005, 2}}, Style{"none", "#000"}, "\xFF");
  p.svg().text(5, 5, "a<b", Anchor::End, 9, -90);
  p.legend({{"series \"1\"", Style{"none", "#123"}, false}, {"points", Style{"#456"}, true}});
  const std::string s = p.str();
  EXPECT_EQ(tiletune::testing::xml_error(s), "") << s;
  EXPECT_NE(s.find("<rect x=\"5\" y=\"10\" width=\"5\" height=\"20\""), std::string::npos) << s;
  EXPECT_NE(s.find("<title>tip &lt;b&gt;&amp;</title></rect>"), std::string::npos) << s;
  EXPECT_NE(s.find("stroke-dasharray=\"2 2\""), std::string::npos);
  EXPECT_NE(s.find("points=\"0,0 1,2\""), std::string::npos) << s;  // 1.005 is stored a little below
  EXPECT_NE(s.find("transform=\"rotate(-90 5 5)\""), std::string::npos);
  EXPECT_EQ(s.find("</svg>"), s.rfind("</svg>"));  // a label cannot close the element
  for (const char* tick : {">1</text>", ">10</text>", ">100</text>"}) EXPECT_NE(s.find(tick), std::string::npos) << tick;
}

TEST(SvgWriter, TheXmlCheckRejectsBrokenMarkup) {  // the check the report tests rely on can fail
  EXPECT_NE(tiletune::testing::xml_error("<svg><title>a < b</title></svg>"), "");
  EXPECT_NE(tiletune::testing::xml_error("<svg><g></svg>"), "");
  EXPECT_NE(tiletune::testing::xml_error("<svg a=\"1\" a=\"2\"/>"), "");
  EXPECT_EQ(tiletune::testing::xml_error("<svg a=\"&amp;\"/>"), "");
}
