# MAF_SANDBOX_SANITIZE: "" | "address;undefined" | "thread". Applied globally so the core,
# plugins and tests agree (ASan and TSan must instrument every translation unit).
set(MAF_SANDBOX_SANITIZE "" CACHE STRING "Sanitizers to build with (address;undefined or thread)")
if(MAF_SANDBOX_SANITIZE)
  string(REPLACE ";" "," _maf_san "${MAF_SANDBOX_SANITIZE}")
  add_compile_options(-fsanitize=${_maf_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_maf_san})
  add_compile_definitions(MAF_SANDBOX_SANITIZED=1)
  if("thread" IN_LIST MAF_SANDBOX_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC notes that TSan does not model std::atomic_thread_fence, which Asio's
    # std_fenced_block issues around every handler it runs. The hand-offs TSan has to see go
    # through the scheduler's mutex, which it does model; the code stays as shipped.
    add_compile_options(-Wno-tsan)
  endif()
endif()
