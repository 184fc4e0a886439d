# Source this (`. uwjit-gpu/env.sh`) to run the packed programs (tools/gpu/pack.sh): they, the
# packed mpiexec and their libraries come first; Open MPI and its PMIx find their plugins and help
# texts in the package. Ranks of one machine talk through shared memory.
uwjit_gpu=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$uwjit_gpu/bin${PATH:+:$PATH}"
export LD_LIBRARY_PATH="$uwjit_gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPAL_PREFIX="$uwjit_gpu/mpi"
export PMIX_MCA_mca_base_component_path
PMIX_MCA_mca_base_component_path=$(find "$uwjit_gpu/mpi" -type d -path '*/pmix2/lib/pmix' | head -1)
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
# Containers often forbid the cross-memory attach vader copies with by default.
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# hwloc (under Open MPI) loads no plugins: those of the machine may be of another hwloc.
export HWLOC_PLUGINS_PATH="$uwjit_gpu/lib/hwloc"
# PMIx loads no compression plugin: a machine's own (Ubuntu's, at the path the packed PMIx was
# built with) is of another PMIx version and fails to load, and ranks of one machine need none.
export PMIX_MCA_pcompress=${PMIX_MCA_pcompress:-^zlib}
export PMIX_MCA_pcompress_base_silence_warning=${PMIX_MCA_pcompress_base_silence_warning:-1}
