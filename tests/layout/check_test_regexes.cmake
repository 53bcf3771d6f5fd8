# Every PASS_REGULAR_EXPRESSION and FAIL_REGULAR_EXPRESSION is one regex (ctest
# layout.test_regexes_whole). The property is a list: a ';' in it cuts it into regexes of which any
# one may match, so "is for --task x; this run's task is y.*exit status 2" passes on its first half
# alone, whatever the exit status. Write '\;' (one regex holding a ';') instead.
# The top level lists the cut ones of every directory, at configure time, into CUT_FILE
# (cmake/HeadlabTestRegexes.cmake):
#   cmake -DCUT_FILE=<build>/tests/cut_test_regexes.txt -P tests/layout/check_test_regexes.cmake
file(STRINGS ${CUT_FILE} cut)
list(LENGTH cut count)
if(count GREATER 0)
  foreach(line IN LISTS cut)
    message(NOTICE "${line}")
  endforeach()
  message(FATAL_ERROR "${count} test regex(es) cut at a ';'; write '\\;' in the CMake string instead")
endif()
message(STATUS "every test regex is one regex")
