# cmake -DGENERATED=<file> -DCHECKED_IN=<file> -P CheckGenerated.cmake
# Fails when a checked-in generated file differs from what the build
# generates now.
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${GENERATED} ${CHECKED_IN}
                RESULT_VARIABLE different)
if(different)
  message(FATAL_ERROR
    "${CHECKED_IN} is not what rn-tblgen generates from the ODS now "
    "(${GENERATED}): an op's ODS changed. Review the difference and copy "
    "the generated file over the checked-in one:\n"
    "  cp ${GENERATED} ${CHECKED_IN}")
endif()
