# cmake -DTANDEM=<built tandem> -DOUT=<folder> -DSOURCE_DIR=<tandem's source> -P cmake/TandemDocs.cmake
# Writes what `cmake --install` installs beside the programs, made by the built tandem itself so it says what
# that binary says: the completion scripts (tandem.bash, _tandem, tandem.fish) and the man page tandem.1,
# gzipped as Debian ships man pages (tandem.1.gz: -9, no name or time stamp, so builds are reproducible).
foreach(var TANDEM OUT SOURCE_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "TandemDocs.cmake: -D${var}=... is required")
  endif()
endforeach()
file(MAKE_DIRECTORY "${OUT}")

function(run_into file)
  execute_process(COMMAND ${ARGN} OUTPUT_FILE "${OUT}/${file}.tmp" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "making ${file}: `${ARGN}` failed (${rc}): ${err}")
  endif()
  file(RENAME "${OUT}/${file}.tmp" "${OUT}/${file}")
endfunction()

run_into(tandem.bash "${TANDEM}" completion bash)
run_into(_tandem "${TANDEM}" completion zsh)
run_into(tandem.fish "${TANDEM}" completion fish)
run_into(tandem.1 "${SOURCE_DIR}/scripts/man-page" "${TANDEM}")
run_into(tandem.1.gz gzip -9 -n -c "${OUT}/tandem.1")
