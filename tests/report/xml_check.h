// Whether a text is well-formed XML, by expat: the report's pages are written in XHTML syntax so
// that a strict parser can check every tag, attribute and entity of them.
#pragma once
#include <expat.h>

#include <map>
#include <string>

namespace tiletune::testing {

struct XmlSummary {
  std::string error;                      // "" when well-formed; else expat's message and line
  std::map<std::string, int> elements;    // how many of each element, by name as written
};

inline XmlSummary parse_xml(const std::string& text) {
  XmlSummary out;
  XML_Parser p = XML_ParserCreate("UTF-8");
  XML_SetUserData(p, &out);
  XML_SetStartElementHandler(p, [](void* data, const XML_Char* name, const XML_Char**) {
    static_cast<XmlSummary*>(data)->elements[name]++;
  });
  if (XML_Parse(p, text.data(), int(text.size()), 1) == XML_STATUS_ERROR)
    out.error = std::string(XML_ErrorString(XML_GetErrorCode(p))) + " at line " +
                std::to_string(XML_GetCurrentLineNumber(p));
  XML_ParserFree(p);
  return out;
}

inline std::string xml_error(const std::string& text) { return parse_xml(text).error; }

}  // namespace tiletune::testing
