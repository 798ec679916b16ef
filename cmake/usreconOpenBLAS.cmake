# usrecon::openblas: OpenBLAS, the CPU backend of MatmulAlgo::blas, as an imported target of
# usrecon's own. kernels/CMakeLists.txt links usrecon::kernels with it, and the installed package
# config makes it again before it loads the exported targets (a static usrecon::kernels carries it
# to the consumer's link line). Why not FindBLAS: its BLAS::BLAS and BLAS_* variables belong to the
# consumer. A consumer that found a BLAS of its own first (BLA_VENDOR Generic, say) would have had
# usrecon::kernels linked with that one (FindBLAS makes BLAS::BLAS only when it does not exist yet:
# "undefined reference to symbol 'openblas_get_num_threads'"), and one that looks for its BLAS after
# find_package(usrecon) would have found ours, with BLAS_FOUND and BLAS_LIBRARIES already set.
#
#   usrecon_find_openblas([HINTS dir...])
# defines usrecon::openblas when OpenBLAS is found; the cache variable USRECON_OPENBLAS_LIBRARY
# holds the library (set it to choose another). Touches no BLAS* or BLA_* variable.
function(usrecon_find_openblas)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "" "HINTS")
  if(TARGET usrecon::openblas)
    return()
  endif()
  find_library(USRECON_OPENBLAS_LIBRARY NAMES openblas HINTS ${arg_HINTS}
               DOC "OpenBLAS, the CPU BLAS of usrecon::kernels (MatmulAlgo::blas)")
  if(USRECON_OPENBLAS_LIBRARY)
    add_library(usrecon::openblas UNKNOWN IMPORTED)
    set_target_properties(usrecon::openblas PROPERTIES IMPORTED_LOCATION "${USRECON_OPENBLAS_LIBRARY}")
  endif()
endfunction()
