// The runtimes compiled into this binary, registered by one explicit call from main().
#include "runtimes/runtime.h"

namespace xlabench {

void register_builtin_runtimes(Registry& registry) {
#ifdef XLABENCH_WITH_TF_C
  register_tf_c(registry);
#endif
#ifdef XLABENCH_WITH_AOTI
  register_aoti(registry);
#endif
#ifdef XLABENCH_WITH_PJRT
  register_pjrt(registry);
#endif
#ifdef XLABENCH_WITH_OPENVINO
  register_openvino(registry);
#endif
#ifdef XLABENCH_WITH_EXECUTORCH
  register_executorch(registry);
#endif
  (void)registry;
}

}  // namespace xlabench
