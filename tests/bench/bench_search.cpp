// Benchmark (not a test): the strategy search (`shardscope plan`) on a multi-statement model
// with 5 mesh axes (dp, fsdp, tp, sp, pp) and 1024 devices: 1001 meshes.
//   bench_search [LAYERS] [REPEATS] [DEVICES] [unrolled|open]   (default: 32 layers, best of 3,
//   1024)
// `open` leaves three dimensions open (docs/reference.md "Open shardings"): the search chooses
// them with the mesh sizes.
// Each layer is an FSDP weight gather, TP MLP with a sequence-parallel output, attention
// scores and a weight gradient; the layers are one `repeat` block (checked once per mesh), or
// with `unrolled` written out one after the other. pp shards nothing here (no pipeline model
// yet), so it is one class.
#include "app/allocator.hpp"
#include "bench_util.hpp"
#include "parser/parser.hpp"
#include "semantics/search.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

std::string generate(int layers) {
    std::string out = "mesh dp=1 fsdp=1 tp=1 sp=1 pp=1\n"
                      "dim b=512 s=4096 d=8192 f=28672 n=64 e=128\n"
                      "dtype bf16\n";
    for (int i = 0; i < layers; ++i) {
        const std::string l = std::to_string(i), next = std::to_string(i + 1);
        out += "A" + l + "_{f_{tp} d} = W" + l + "_{f_{tp} d_{fsdp}}\n";
        out += "h" + l + "_{b_{dp,fsdp} s f_{tp}} = A" + l + "_{f_{tp} d} x" + l +
               "_{b_{dp,fsdp} s d}\n";
        out += "B" + l + "_{d f_{tp}} = V" + l + "_{d_{fsdp} f_{tp}}\n";
        out += "x" + next + "_{b_{dp,fsdp} s_{sp} d} = B" + l + "_{d f_{tp}} phi(h" + l +
               "_{b_{dp,fsdp} s f_{tp}})\n";
        out += "q" + l + "_{b_{dp,fsdp} s n_{tp} e} = Q" + l + "_{n_{tp} e d} x" + next +
               "_{b_{dp,fsdp} s d}\n";
        out += "a" + l + "_{b_{dp,fsdp} n_{tp} s s'} = q" + l + "_{b_{dp,fsdp} s n_{tp} e} k" + l +
               "_{b_{dp,fsdp} s' n_{tp} e}\n";
        out += "G" + l + "_{f_{tp} d_{fsdp}} = h" + l + "_{b_{dp,fsdp} s f_{tp}} x" + l +
               "_{b_{dp,fsdp} s d}\n";
    }
    return out;
}

/// The same layer as the body of one `repeat l=LAYERS` block, x carried from layer to layer.
/// `open`: the weights' FSDP cut and the sequence-parallel output left open (`d_{fsdp?}`,
/// `s_{sp?}`: three open dimensions, 8 assignments per mesh).
std::string generate_repeated(int layers, bool open = false) {
    const std::string fsdp = open ? "d_{fsdp?}" : "d_{fsdp}";
    const std::string sp = open ? "s_{sp?}" : "s_{sp}";
    return "mesh dp=1 fsdp=1 tp=1 sp=1 pp=1\n"
           "dim b=512 s=4096 d=8192 f=28672 n=64 e=128\n"
           "dtype bf16\n"
           "x_{b_{dp,fsdp} s d} = x0_{b_{dp,fsdp} s d}\n"
           "repeat l=" +
           std::to_string(layers) +
           "\n"
           "  A_{f_{tp} d} = W_{f_{tp} " +
           fsdp +
           "}\n"
           "  h_{b_{dp,fsdp} s f_{tp}} = A_{f_{tp} d} x_{b_{dp,fsdp} s d}\n"
           "  B_{d f_{tp}} = V_{" +
           fsdp +
           " f_{tp}}\n"
           "  y_{b_{dp,fsdp} " +
           sp +
           " d} = B_{d f_{tp}} phi(h_{b_{dp,fsdp} s f_{tp}})\n"
           "  q_{b_{dp,fsdp} s n_{tp} e} = Q_{n_{tp} e d} y_{b_{dp,fsdp} s d}\n"
           "  a_{b_{dp,fsdp} n_{tp} s s'} = q_{b_{dp,fsdp} s n_{tp} e} k_{b_{dp,fsdp} s' n_{tp} "
           "e}\n"
           "  G_{f_{tp} d_{fsdp}} = h_{b_{dp,fsdp} s f_{tp}} x_{b_{dp,fsdp} s d}\n"
           "  x_{b_{dp,fsdp} s d} := y_{b_{dp,fsdp} s d}\n"
           "end\n";
}

} // namespace

int main(int argc, char** argv) {
    const int layers = argc > 1 ? std::atoi(argv[1]) : 32;
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
    const long devices = argc > 3 ? std::atol(argv[3]) : 1024;
    const bool unrolled = argc > 4 && std::string(argv[4]) == "unrolled";
    const bool open = argc > 4 && std::string(argv[4]) == "open";
    if (layers <= 0 || repeats <= 0 || devices <= 0) {
        std::fprintf(stderr,
                     "usage: bench_search [LAYERS>0] [REPEATS>0] [DEVICES>0] [unrolled|open]\n");
        return 2;
    }
    using shardscope::bench::seconds_since;
    const shardscope::SourceFile file(
        "bench_search.ein", unrolled ? generate(layers) : generate_repeated(layers, open));
    const auto parsed = shardscope::parser::parse(file);
    if (parsed.has_errors()) {
        std::fprintf(stderr, "bench program has parse errors\n");
        return 1;
    }
    shardscope::semantics::SearchOptions o;
    o.devices = devices;
    o.hbm_bytes = 80e9;
    double best = 1e30;
    shardscope::semantics::SearchResult r;
    for (int k = 0; k < repeats; ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        r = shardscope::semantics::search(parsed.program, o);
        best = std::min(best, seconds_since(t0));
    }
    if (r.ranked.empty()) {
        std::fprintf(stderr, "no candidate left:\n%s",
                     shardscope::semantics::format_search(r, "bench", 3).c_str());
        return 1;
    }
    std::printf("plan, %d layers (%s), 5 axes, %ld devices: %.2f s (best of %d; "
                "%zu meshes x %zu open assignments, %zu checked, %zu kept; %s)\n",
                layers,
                unrolled ? "written out, 7 statements each"
                : open   ? "one repeat block, 3 open dimensions"
                         : "one repeat block",
                devices, best, repeats, r.factorizations, r.open_assignments, r.checked,
                r.ranked.size(), shardscope::app::allocator_name().c_str());
    std::printf("best: %s", r.ranked.front().mesh_text.c_str());
    if (open)
        std::printf(" (%s)", shardscope::semantics::open_choice_text(r, r.ranked.front()).c_str());
    std::printf("\n");
    return 0;
}
