#include "exec/data.hpp"

namespace shardscope::exec {

namespace {

std::uint64_t fnv1a(const std::string& s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s)
        h = (h ^ c) * 1099511628211ull;
    return h;
}

/// splitmix64: a small, fast, well-mixed generator; the stream depends only on the seed.
struct SplitMix {
    std::uint64_t state;
    std::uint64_t next() {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53 * 2.0 - 1.0; }
    double small_int() { return static_cast<double>(static_cast<int>(next() % 9) - 4); }
};

} // namespace

std::vector<double> input_values(const std::string& key, std::int64_t count,
                                 const DataOptions& options) {
    if (auto it = options.given.find(key);
        it != options.given.end() && static_cast<std::int64_t>(it->second.size()) == count)
        return it->second;
    std::vector<double> out(static_cast<std::size_t>(count));
    SplitMix rng{options.seed ^ fnv1a(key)};
    for (std::int64_t i = 0; i < count; ++i) {
        auto& v = out[static_cast<std::size_t>(i)];
        switch (options.mode) {
        case DataMode::Random:
            v = rng.uniform();
            break;
        case DataMode::Arange:
            v = static_cast<double>(i + 1);
            break;
        case DataMode::Ints:
            v = rng.small_int();
            break;
        }
    }
    return out;
}

template <class T>
Tensor<T> input_shard(const std::string& key, const semantics::TensorLayout& t,
                      const std::vector<int>& labels, const MeshShape& mesh,
                      const std::vector<int>& coords, const DataOptions& options) {
    Tensor<T> global;
    global.labels = labels;
    for (const auto& a : t.atoms)
        global.shape.push_back(a.extent);
    const auto count = global.size();
    const auto values = input_values(key, count, options);
    global.data.assign(values.begin(), values.end());
    // Partial sums: the coordinates along the partial axes pick a share.
    std::vector<int> axes;
    for (const auto& [k, op] : partial_axes(t))
        if (op == semantics::PartialOp::Sum) axes.push_back(k);
    if (!axes.empty()) {
        auto noise = [&](const std::vector<int>& c) {
            std::uint64_t s = options.seed ^ fnv1a(key) ^ 0x5bd1e995ull;
            for (int k : axes)
                s = s * 1000003ull + static_cast<std::uint64_t>(c[static_cast<std::size_t>(k)]);
            SplitMix rng{s};
            std::vector<double> out(static_cast<std::size_t>(count));
            for (auto& v : out)
                v = rng.small_int();
            return out;
        };
        bool at_zero = true;
        for (int k : axes)
            at_zero &= coords[static_cast<std::size_t>(k)] == 0;
        if (!at_zero) {
            const auto mine = noise(coords);
            global.data.assign(mine.begin(), mine.end());
        } else {
            // Every other combination of coordinates along the partial axes.
            std::vector<int> c = coords;
            while (true) {
                std::size_t a = 0;
                for (; a < axes.size(); ++a) {
                    auto& x = c[static_cast<std::size_t>(axes[a])];
                    if (++x < mesh.sizes[static_cast<std::size_t>(axes[a])]) break;
                    x = 0;
                }
                if (a == axes.size()) break;
                const auto other = noise(c);
                for (std::size_t e = 0; e < other.size(); ++e)
                    global.data[e] -= static_cast<T>(other[e]);
            }
        }
    }
    return shard_of(global, t, mesh, coords);
}

template Tensor<float> input_shard(const std::string&, const semantics::TensorLayout&,
                                   const std::vector<int>&, const MeshShape&,
                                   const std::vector<int>&, const DataOptions&);
template Tensor<double> input_shard(const std::string&, const semantics::TensorLayout&,
                                    const std::vector<int>&, const MeshShape&,
                                    const std::vector<int>&, const DataOptions&);

} // namespace shardscope::exec
