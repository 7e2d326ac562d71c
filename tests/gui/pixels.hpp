// Pictures as pixels: a PNG loaded with stb_image, and counts of exact colours in it.
#pragma once

#include "render/geometry.hpp"

#include <stb/stb_image.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardscope::test {

struct Image {
    int width = 0, height = 0;
    std::vector<std::uint8_t> rgba;
    bool ok() const { return width > 0 && height > 0; }
    /// Pixels of exactly colour `c` (alpha ignored).
    long count(render::Color c) const {
        long n = 0;
        for (std::size_t i = 0; i + 3 < rgba.size(); i += 4)
            n += rgba[i] == c.r && rgba[i + 1] == c.g && rgba[i + 2] == c.b;
        return n;
    }
    long pixels() const { return static_cast<long>(width) * height; }
    /// Distinct colours (alpha ignored).
    std::size_t distinct() const {
        std::map<std::uint32_t, int> seen;
        for (std::size_t i = 0; i + 3 < rgba.size(); i += 4)
            ++seen[static_cast<std::uint32_t>(rgba[i]) << 16 | rgba[i + 1] << 8 | rgba[i + 2]];
        return seen.size();
    }
};

inline Image load_png(const std::string& path) {
    Image img;
    int channels = 0;
    unsigned char* data = stbi_load(path.c_str(), &img.width, &img.height, &channels, 4);
    if (!data) return {};
    img.rgba.assign(data, data + static_cast<std::size_t>(img.width) * img.height * 4);
    stbi_image_free(data);
    return img;
}

} // namespace shardscope::test
