/// \file
/// The exception every starter throws until the student fills a function in.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pa {

/// [not_implemented]
/// Thrown by a starter function that has not been written yet; its message names the function
/// and the file to edit, e.g.
/// "not implemented yet: write_kv — fill it in at labs/01-.../starter.cpp".
class NotImplemented : public std::logic_error {
 public:
  explicit NotImplemented(std::string_view function,
                          std::source_location where = std::source_location::current())
      : NotImplemented(function, std::string_view(where.file_name())) {}

  /// The same, for a function whose body lives in `file` (e.g. a kernel, which cannot throw:
  /// its launcher throws for it and names the file that holds it).
  NotImplemented(std::string_view function, std::string_view file)
      : std::logic_error("not implemented yet: " + std::string(function) + " — fill it in at " +
                         repo_relative(file)) {}

  /// The part of `path` from its last "labs/" on — or, in a path without one, from its last
  /// "solutions/", else its last "common/" (the roots are tried in that order) — so the message
  /// is the same on every machine, wherever the repository was cloned.
  static std::string repo_relative(std::string_view path) {
    for (std::string_view root : {"labs/", "solutions/", "common/"}) {
      if (const auto at = path.rfind(root); at != std::string_view::npos) {
        return std::string(path.substr(at));
      }
    }
    return std::string(path);
  }
};
/// [not_implemented]

}  // namespace pa
