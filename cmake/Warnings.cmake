# maf_enable_warnings(target): the project's warning set, applied to our own targets only.
option(MAF_SANDBOX_WERROR "Treat warnings as errors" OFF)
function(maf_enable_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wnon-virtual-dtor
                                           -Wimplicit-fallthrough
                                           $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local>)
  if(MAF_SANDBOX_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
