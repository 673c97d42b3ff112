//===- RNFusedOps.td - Fused Conv+BN+ReLU ops of the rn dialect -*- tablegen -*-===//

#ifndef RN_DIALECT_RN_FUSED_OPS_TD
#define RN_DIALECT_RN_FUSED_OPS_TD

include "dialects/rn/RNBase.td"

#endif // RN_DIALECT_RN_FUSED_OPS_TD
