# maf_enable_warnings(target): the project's warning set, applied to our own targets only.
option(MAF_SANDBOX_WERROR "Treat warnings as errors" OFF)
function(maf_enable_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wnon-virtual-dtor
                                           -Wimplicit-fallthrough
                                           $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local>
                                           # GCC (12 through 15) reports every Asio awaitable
                                           # frame at -O2 as freed by a "mismatched" delete:
                                           # the frame's operator new inlines to unsized
                                           # ::operator new, its operator delete is the sized
                                           # form, a well-formed pair (GCC PR middle-end/109224).
                                           # Mismatched allocations in our own code are still
                                           # caught at run time by ASan (alloc-dealloc-mismatch).
                                           $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>)
  if(MAF_SANDBOX_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
