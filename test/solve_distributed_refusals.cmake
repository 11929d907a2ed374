# bcsr24_solve --gpus / --mpi with the block solver refuses what only one GPU can do, with a message that says so,
# before touching a GPU (so this runs in CI). Usage: cmake -DEXE=<bcsr24_solve> -P solve_distributed_refusals.cmake
function(expect_refusal fragment)
  execute_process(COMMAND ${EXE} --generate-diffusion 12 11 10 ${ARGN}
    RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(status EQUAL 0)
    message(FATAL_ERROR "bcsr24_solve ${ARGN}: accepted, expected a refusal naming '${fragment}'")
  endif()
  string(FIND "${out}${err}" "${fragment}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "bcsr24_solve ${ARGN}: refused without '${fragment}':\n${out}${err}")
  endif()
endfunction()
expect_refusal("--compare runs on one GPU" --gpus 2 --compare)
expect_refusal("--inner-backend bcsr24" --gpus 2 --inner-backend cusparse_csr_f32)
expect_refusal("no --time-limit" --gpus 2 --time-limit 10)
expect_refusal("not --solver pcg" --gpus 2 --solver pcg)
expect_refusal("--gpus needs --device gpu" --gpus 2 --device cpu)
