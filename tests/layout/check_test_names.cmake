# Every doctest case runs under ctest (ctest layout.test_names_reach_ctest):
#   cmake -DSOURCE_DIR=<repo> -P tests/layout/check_test_names.cmake
# doctest_discover_tests turns each TEST_CASE name into a ctest test whose command is
# --test-case=NAME; CMake cuts a name at a ';' (its list separator), so a case named "a; b" runs
# as --test-case=a, which matches no case and passes having run nothing. Such names are refused.
file(GLOB_RECURSE files ${SOURCE_DIR}/tests/*.cpp ${SOURCE_DIR}/course/*.cpp)
set(count 0)
foreach(file IN LISTS files)
  file(READ ${file} text)
  # One match per name holding a ';' (the match itself is cut at it, which does not matter here).
  string(REGEX MATCHALL "TEST_CASE(_TEMPLATE)?\\(\"[^\"\n]*;" found "${text}")
  if(found)
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
    string(REPLACE ";" "<;>" shown "${found}")
    message(NOTICE "${rel}: a TEST_CASE name holds ';' (ctest would run no case): ${shown}")
    math(EXPR count "${count} + 1")
  endif()
endforeach()
if(count GREATER 0)
  message(FATAL_ERROR "${count} file(s) name a test case with ';'; use ',' or 'and' instead")
endif()
message(STATUS "every TEST_CASE name of ${SOURCE_DIR}/tests and course/ reaches ctest whole")
