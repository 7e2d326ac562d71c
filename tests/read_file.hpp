// The whole of a file as a string, for tests that compare against files and samples.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace shardscope::test {

/// The file's bytes; empty when it cannot be read (the comparison that follows then fails).
inline std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace shardscope::test
