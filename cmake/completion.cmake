# Writes one completion file from the built binary, at build time:
#   cmake -DHPAK=path/to/hpak -DSHELL_NAME=bash|zsh|commands -DOUT=file -P cmake/completion.cmake
# Written beside and renamed, so a failed run leaves no partial file.
execute_process(COMMAND ${HPAK} completion ${SHELL_NAME} OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "'${HPAK} completion ${SHELL_NAME}' failed: ${rc}")
endif()
file(RENAME ${OUT}.tmp ${OUT})
