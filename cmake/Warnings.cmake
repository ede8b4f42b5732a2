# maf_enable_warnings(target): the project's warning set, applied to our own targets only.
option(MAF_SANDBOX_WERROR "Treat warnings as errors" OFF)
function(maf_enable_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow=local
                                           -Wnon-virtual-dtor -Wimplicit-fallthrough)
  if(MAF_SANDBOX_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
