// The executor end to end (filled in by the executor tests).
#include <doctest/doctest.h>
