# Course mode (docs/course.md): reads course/tasks.txt, the one declaration of the course's tasks.
#
# headlab_read_course_tasks() sets, in the caller's scope,
#   HEADLAB_COURSE_IDS                 the task ids in file order
#   HEADLAB_COURSE_TITLE_<id>          its title
#   HEADLAB_COURSE_FILE_<id>           the source file holding its region
#   HEADLAB_COURSE_DEPS_<id>           its direct prerequisites, space-separated (empty for none)
#   HEADLAB_COURSE_POINTS_<id>         its points
# and makes CMake re-run when the file changes.
function(headlab_read_course_tasks)
  set(tasks_file ${PROJECT_SOURCE_DIR}/course/tasks.txt)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${tasks_file})
  file(STRINGS ${tasks_file} lines)
  set(ids "")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(line STREQUAL "" OR line MATCHES "^[#@]")
      continue()
    endif()
    if(line MATCHES "[\"\\\\;]")
      message(FATAL_ERROR "course/tasks.txt: no quotes, backslashes or semicolons please: ${line}")
    endif()
    string(REPLACE " | " ";" fields "${line}")
    list(LENGTH fields n)
    if(NOT n EQUAL 6)
      message(FATAL_ERROR "course/tasks.txt: expected 'id | title | prerequisites | file | tutorial | points', got: ${line}")
    endif()
    list(GET fields 0 id)
    list(GET fields 1 title)
    list(GET fields 2 deps)
    list(GET fields 3 source)
    list(GET fields 5 points)
    if(deps STREQUAL "-")
      set(deps "")
    endif()
    set(HEADLAB_COURSE_DEPS_${id} "${deps}" PARENT_SCOPE)
    set(HEADLAB_COURSE_POINTS_${id} "${points}" PARENT_SCOPE)
    list(APPEND ids ${id})
    set(HEADLAB_COURSE_TITLE_${id} "${title}" PARENT_SCOPE)
    set(HEADLAB_COURSE_FILE_${id} "${source}" PARENT_SCOPE)
  endforeach()
  set(HEADLAB_COURSE_IDS "${ids}" PARENT_SCOPE)
endfunction()
