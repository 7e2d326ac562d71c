// Compiled by the layering tests (tests/CMakeLists.txt): with SHARDSCOPE_NO_GRAMMAR this include
// must fail, as it would inside semantics/, exec/, codegen/ or render/.
#include "parser/parser.hpp"

int main() {
    return 0;
}
