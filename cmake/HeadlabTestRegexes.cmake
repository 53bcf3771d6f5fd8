# A test's PASS_REGULAR_EXPRESSION (or FAIL_) is a CMake list: a ';' in it cuts it into several
# regexes of which any one may match, so "is for --task x; this run's task is y.*exit status 2"
# passes on its first half alone, whatever the exit status. Write '\;' for a ';' of the regex.
# ctest layout.test_regexes_whole (tests/layout/check_test_regexes.cmake) fails on any cut one.
#
# headlab_note_cut_test_regexes(): called last in each directory that adds tests (the tests of a
# directory are visible only there); records its cut regexes in the global property
# HEADLAB_CUT_TEST_REGEXES, which the top level writes to <build>/tests/cut_test_regexes.txt.
function(headlab_note_cut_test_regexes)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    foreach(property PASS_REGULAR_EXPRESSION FAIL_REGULAR_EXPRESSION)
      get_test_property(${test} ${property} regexes)
      list(LENGTH regexes pieces)
      if(NOT regexes STREQUAL "NOTFOUND" AND pieces GREATER 1)
        set_property(GLOBAL APPEND PROPERTY HEADLAB_CUT_TEST_REGEXES "${test}: ${property} cut into ${pieces} regexes")
      endif()
    endforeach()
  endforeach()
endfunction()
