#include "render/palette.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace shardscope::render {

namespace {

constexpr std::array<Color, 10> kTab10{{{31, 119, 180, 255},
                                        {255, 127, 14, 255},
                                        {44, 160, 44, 255},
                                        {214, 39, 40, 255},
                                        {148, 103, 189, 255},
                                        {140, 86, 75, 255},
                                        {227, 119, 194, 255},
                                        {127, 127, 127, 255},
                                        {188, 189, 34, 255},
                                        {23, 190, 207, 255}}};

constexpr std::array<Color, 20> kTab20{
    {{31, 119, 180, 255},  {174, 199, 232, 255}, {255, 127, 14, 255},  {255, 187, 120, 255},
     {44, 160, 44, 255},   {152, 223, 138, 255}, {214, 39, 40, 255},   {255, 152, 150, 255},
     {148, 103, 189, 255}, {197, 176, 213, 255}, {140, 86, 75, 255},   {196, 156, 148, 255},
     {227, 119, 194, 255}, {247, 182, 210, 255}, {127, 127, 127, 255}, {199, 199, 199, 255},
     {188, 189, 34, 255},  {219, 219, 141, 255}, {23, 190, 207, 255},  {158, 218, 229, 255}}};

Color hsv(double h, double s, double v) {
    h = h - std::floor(h);
    const double i = std::floor(h * 6);
    const double f = h * 6 - i;
    const double p = v * (1 - s), q = v * (1 - f * s), t = v * (1 - (1 - f) * s);
    double r = 0, g = 0, b = 0;
    switch (static_cast<int>(i) % 6) {
    case 0:
        r = v, g = t, b = p;
        break;
    case 1:
        r = q, g = v, b = p;
        break;
    case 2:
        r = p, g = v, b = t;
        break;
    case 3:
        r = p, g = q, b = v;
        break;
    case 4:
        r = t, g = p, b = v;
        break;
    default:
        r = v, g = p, b = q;
        break;
    }
    auto c = [](double x) { return static_cast<std::uint8_t>(std::lround(x * 255)); };
    return {c(r), c(g), c(b), 255};
}

} // namespace

namespace {

/// k coprime with n near n * golden (1 for n <= 2).
std::int64_t golden_step(std::int64_t n) {
    auto gcd = [](std::int64_t a, std::int64_t b) {
        while (b) {
            const std::int64_t t = a % b;
            a = b;
            b = t;
        }
        return a;
    };
    std::int64_t step = static_cast<std::int64_t>(static_cast<double>(n) * 0.618033988749895);
    while (step > 1 && gcd(step, n) != 1)
        --step;
    return std::max<std::int64_t>(step, 1);
}

} // namespace

Color device_color(std::int64_t id, std::int64_t count) {
    if (id < 0) return {200, 200, 200, 255};
    if (count <= 10) return kTab10[static_cast<std::size_t>(id % 10)];
    if (count <= 20) return kTab20[static_cast<std::size_t>(id % 20)];
    // Three saturation/value levels; within a level, ceil(count/3) evenly spaced hues visited
    // in a golden-ratio order (neighbouring ids far apart on the wheel). Evenly spaced hues
    // differ by several 8-bit steps up to a few thousand devices, so no two ids coincide.
    static constexpr double kSat[3] = {0.85, 0.55, 0.95};
    static constexpr double kVal[3] = {0.92, 0.98, 0.70};
    const auto level = static_cast<std::size_t>(id % 3);
    const std::int64_t hues = (count + 2) / 3;
    const std::int64_t j = ((id / 3) * golden_step(hues)) % hues;
    return hsv(static_cast<double>(j) / static_cast<double>(hues) +
                   0.1 * static_cast<double>(level),
               kSat[level], kVal[level]);
}

Color mesh_device_color(const std::vector<std::int64_t>& sizes, const std::vector<int>& coords,
                        std::int64_t id) {
    std::int64_t count = 1, wide = 0;
    for (auto s : sizes) {
        count *= s;
        wide += s > 1;
    }
    if (count <= 20 || wide < 2 || coords.size() != sizes.size() || sizes.back() < 2)
        return device_color(id, count);
    const std::int64_t lights = sizes.back();
    const std::int64_t hues = count / lights;
    std::int64_t major = 0;
    for (std::size_t k = 0; k + 1 < sizes.size(); ++k)
        major = major * sizes[k] + coords[k];
    const std::int64_t hue = hues <= 12 ? major : (major * golden_step(hues)) % hues;
    // Lightness levels visited 0, n-1, 1, n-2, ... would put neighbours at the ends; instead
    // level j of the axis goes to (j * step) mod n with step about n/2, coprime with n.
    std::int64_t step = lights / 2 + (lights > 3 ? 1 : 0);
    auto coprime = [](std::int64_t a, std::int64_t b) {
        while (b) {
            const std::int64_t t = a % b;
            a = b;
            b = t;
        }
        return a == 1;
    };
    while (step > 1 && !coprime(step, lights))
        ++step;
    const std::int64_t level = (coords.back() * step) % lights;
    const double t = static_cast<double>(level) / static_cast<double>(lights - 1); // 0 dark
    return hsv(static_cast<double>(hue) / static_cast<double>(hues), 0.95 - 0.6 * t,
               0.50 + 0.48 * t);
}

Color replicated_color(std::uint32_t mask) {
    static constexpr std::array<Color, 8> kTints{{{228, 228, 240, 255},
                                                  {240, 232, 212, 255},
                                                  {220, 238, 220, 255},
                                                  {242, 222, 232, 255},
                                                  {218, 236, 242, 255},
                                                  {236, 226, 246, 255},
                                                  {244, 242, 210, 255},
                                                  {232, 232, 232, 255}}};
    return kTints[mask % kTints.size()];
}

Color text_on(Color bg) {
    const double lum = 0.299 * bg.r + 0.587 * bg.g + 0.114 * bg.b;
    return lum > 150 ? colors::kText : Color{255, 255, 255, 255};
}

Color step_color(semantics::StepKind kind) {
    using K = semantics::StepKind;
    switch (kind) {
    case K::Compute:
        return {90, 140, 210, 255};
    case K::AllReduce:
        return {220, 90, 70, 255};
    case K::AllGather:
        return {240, 160, 40, 255};
    case K::ReduceScatter:
        return {200, 70, 150, 255};
    case K::AllToAll:
        return {140, 90, 200, 255};
    case K::Permute:
        return {60, 170, 160, 255};
    case K::Slice:
    case K::Split:
        return {170, 170, 170, 255};
    }
    return {170, 170, 170, 255};
}

} // namespace shardscope::render
