# A test's PASS_REGULAR_EXPRESSION (or FAIL_) is a CMake list: a ';' in it cuts it into several
# regexes of which any one may match, so "is for --task x; this run's task is y.*exit status 2"
# passes on its first half alone, whatever the exit status. Write '\;' for a ';' of the regex.
# ctest layout.test_regexes_whole (tests/layout/check_test_regexes.cmake) fails on any cut one.
#
# headlab_note_cut_test_regexes(): called last in each directory that adds tests (the tests of a
# directory are visible only there); records its cut regexes in the global property
# HEADLAB_CUT_TEST_REGEXES, which the top level writes to <build>/tests/cut_test_regexes.txt.
function(headlab_note_cut_test_regexes)
  set_property(GLOBAL APPEND PROPERTY HEADLAB_TEST_REGEXES_NOTED "${CMAKE_CURRENT_SOURCE_DIR}")
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

# headlab_write_cut_test_regexes(FILE): at the end of the top level: the cut regexes noted, and each
# directory that adds tests without noting them (its regexes would go unchecked), one a line.
function(headlab_write_cut_test_regexes file)
  get_property(lines GLOBAL PROPERTY HEADLAB_CUT_TEST_REGEXES)
  get_property(noted GLOBAL PROPERTY HEADLAB_TEST_REGEXES_NOTED)
  set(directories "${CMAKE_SOURCE_DIR}")
  while(directories)
    list(POP_FRONT directories dir)
    get_property(sub DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
    list(APPEND directories ${sub})
    get_property(tests DIRECTORY "${dir}" PROPERTY TESTS)
    if(tests AND NOT dir IN_LIST noted)
      list(APPEND lines "${dir}: adds tests but does not call headlab_note_cut_test_regexes() last")
    endif()
  endwhile()
  list(JOIN lines "\n" text)
  file(WRITE "${file}" "${text}")
endfunction()
