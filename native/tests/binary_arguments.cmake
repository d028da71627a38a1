# The built binary: --list works; bad arguments exit 2 and the last line of stderr is the one-line
# reason (a runtime's SDK may log while it loads, before main runs).
function(expect code)
  execute_process(COMMAND ${BIN} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL code)
    message(FATAL_ERROR "${BIN} ${ARGN}: exit ${rc}, expected ${code}; stderr: ${err}")
  endif()
  if(code GREATER 0 AND NOT err MATCHES "(^|\n)xlabench-native: [^\n]+\n$")
    message(FATAL_ERROR "${BIN} ${ARGN}: expected a last line 'xlabench-native: ...', got: ${err}")
  endif()
  set(last_out "${out}" PARENT_SCOPE)
  set(last_err "${err}" PARENT_SCOPE)
endfunction()

file(MAKE_DIRECTORY ${WORK})
expect(0 --list)
if(NOT last_out MATCHES "\"program\":\"xlabench-native\"")
  message(FATAL_ERROR "--list printed ${last_out}")
endif()
# Every runtime CMake compiled in (XLABENCH_RUNTIMES, e.g. openvino) is listed.
foreach(runtime IN LISTS RUNTIMES)
  if(NOT last_out MATCHES "\"${runtime}\"")
    message(FATAL_ERROR "--list does not list the compiled-in runtime ${runtime}: ${last_out}")
  endif()
endforeach()
expect(2)
expect(2 frobnicate)
expect(2 run ${WORK})
expect(2 run ${WORK}/missing --spec ${WORK}/missing.json)

# tf_c: a tensor name whose index is not an integer >= 0 is refused from the manifest, before the
# SavedModel is read: exit 2 and the name (std::stoi used to say only "stoi").
list(FIND RUNTIMES tf_c tf_c_index)
if(tf_c_index GREATER -1)
  set(dir ${WORK}/tf_c_bad_tensor)
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${dir}/input.bin "12345678")
  file(WRITE ${WORK}/empty_spec.json "{}")
  foreach(tensor "x:abc" "x:-1" "x:1x" "x:")
    file(WRITE ${dir}/artifact.json "{\"runtime\": \"tf_c\", \"saved_model\": \"saved_model\", \
\"inputs\": [{\"file\": \"input.bin\", \"shape\": [1, 2], \"tensor\": \"${tensor}\"}], \
\"outputs\": [{\"tensor\": \"y:0\"}]}")
    expect(2 run ${dir} --spec ${WORK}/empty_spec.json)
    if(NOT last_err MATCHES "tf_c: bad tensor '${tensor}' in the artifact manifest[^\n]*\n$")
      message(FATAL_ERROR "tf_c with tensor ${tensor}: expected 'bad tensor', got: ${last_err}")
    endif()
  endforeach()
endif()

# pjrt: a load that fails once the plugin has made its client exits 1 with the reason and ends
# cleanly (the plugin's exit handlers used to run after dlclose had unmapped them: SIGSEGV).
list(FIND RUNTIMES pjrt pjrt_index)
if(pjrt_index GREATER -1 AND EXISTS "${PJRT_PLUGIN}")
  set(dir ${WORK}/pjrt_missing_module)
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${dir}/artifact.json "{\"runtime\": \"pjrt\", \"plugin\": \"${PJRT_PLUGIN}\", \
\"module\": \"module.mlirbc\", \"compile_options\": \"compile_options.pb\", \"inputs\": []}")
  file(WRITE ${WORK}/empty_spec.json "{}")
  expect(1 run ${dir} --spec ${WORK}/empty_spec.json)
  if(NOT last_err MATCHES "cannot read [^\n]*module.mlirbc\n$")
    message(FATAL_ERROR "pjrt without its module: expected 'cannot read ...', got: ${last_err}")
  endif()
endif()

# executorch: a program that is not one exits 1 with the stage and ExecuTorch's error name (the
# runtime logs its own reason on stderr first).
list(FIND RUNTIMES executorch executorch_index)
if(executorch_index GREATER -1)
  set(dir ${WORK}/executorch_corrupt_program)
  file(MAKE_DIRECTORY ${dir})
  # Longer than the header ExecuTorch reads first (shorter is InvalidArgument, not this check).
  string(REPEAT "not an ExecuTorch program " 16 garbage)
  file(WRITE ${dir}/model.pte "${garbage}")
  file(WRITE ${dir}/input.bin "12345678")
  file(WRITE ${dir}/artifact.json "{\"runtime\": \"executorch\", \"program\": \"model.pte\", \
\"method\": \"forward\", \"inputs\": [{\"file\": \"input.bin\", \"shape\": [1, 2]}]}")
  file(WRITE ${WORK}/empty_spec.json "{}")
  expect(1 run ${dir} --spec ${WORK}/empty_spec.json)
  if(NOT last_err MATCHES "executorch: loading program [^\n]*model.pte: Error::InvalidProgram[^\n]*\n$")
    message(FATAL_ERROR "executorch with a corrupt program: expected 'loading program ... "
                        "Error::InvalidProgram', got: ${last_err}")
  endif()
endif()
