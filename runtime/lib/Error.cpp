//===- Error.cpp - fatal run-time errors ----------------------------------===//

#include "Error.h"

#include <cstdio>
#include <cstdlib>

[[noreturn]] void titanrt::fatal(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::exit(1);
}
