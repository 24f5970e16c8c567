#include "pa/checks.hpp"

namespace pa {

std::string argument_error_message(std::string_view function, std::string_view argument,
                                   std::string_view expected, std::string_view actual) {
  std::ostringstream out;
  out << function << ": " << argument << " — expected " << expected << ", got " << actual;
  return out.str();
}

void ArgCheck::fail(std::string_view argument, std::string_view expected,
                    std::string_view actual) const {
  throw std::invalid_argument(argument_error_message(function_, argument, expected, actual));
}

void ArgCheck::ids_in_range(std::string_view argument, const IVec& ids, Eigen::Index count,
                            std::int64_t lo, std::int64_t hi, std::string_view range_name) const {
  for (Eigen::Index i = 0; i < count && i < ids.size(); ++i) {
    if (ids[i] < lo || ids[i] >= hi) {
      fail(std::string(argument) + "[" + std::to_string(i) + "]",
           "an id in [" + std::to_string(lo) + ", " + std::to_string(hi) + ") (" +
               std::string(range_name) + ")",
           std::to_string(ids[i]));
    }
  }
}

std::string ArgCheck::shape(Eigen::Index rows, Eigen::Index cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

}  // namespace pa
