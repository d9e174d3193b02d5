/*
 * Every Objective-C class and selector the Metal half sends, in one table. The test
 * test/selectors.test.ts checks each against test/apple-api.json (the classes' and
 * protocols' methods as Apple documents them, with the page of each), so a misspelt
 * selector fails on Linux instead of raising "unrecognized selector" on a Mac.
 * X(c_name, "selector")
 */
#ifndef BP_MPS_SELECTORS_H
#define BP_MPS_SELECTORS_H

#define BP_MPS_CLASSES(X)                                                                      \
  X(NSString)                                                                                  \
  X(NSNumber)                                                                                  \
  X(NSArray)                                                                                   \
  X(NSDictionary)                                                                              \
  X(NSData)                                                                                    \
  X(MPSGraph)                                                                                  \
  X(MPSGraphTensorData)                                                                        \
  X(MPSGraphConvolution2DOpDescriptor)

#define BP_MPS_SELECTORS(X)                                                                    \
  /* NSObject */                                                                               \
  X(alloc, "alloc")                                                                            \
  X(init, "init")                                                                              \
  X(release, "release")                                                                        \
  X(respondsToSelector, "respondsToSelector:")                                                 \
  /* Foundation */                                                                             \
  X(stringWithUTF8String, "stringWithUTF8String:")                                             \
  X(UTF8String, "UTF8String")                                                                  \
  X(numberWithLongLong, "numberWithLongLong:")                                                 \
  X(arrayWithObjectsCount, "arrayWithObjects:count:")                                          \
  X(dictionaryWithObjectsForKeysCount, "dictionaryWithObjects:forKeys:count:")                 \
  X(dataWithBytesLength, "dataWithBytes:length:")                                              \
  X(localizedDescription, "localizedDescription")                                              \
  /* MTLDevice */                                                                              \
  X(name, "name")                                                                              \
  X(recommendedMaxWorkingSetSize, "recommendedMaxWorkingSetSize")                              \
  X(hasUnifiedMemory, "hasUnifiedMemory")                                                      \
  X(newCommandQueue, "newCommandQueue")                                                        \
  X(newBufferWithLengthOptions, "newBufferWithLength:options:")                                \
  X(newLibraryWithSourceOptionsError, "newLibraryWithSource:options:error:")                   \
  X(newComputePipelineStateWithFunctionError, "newComputePipelineStateWithFunction:error:")    \
  /* MTLLibrary, MTLComputePipelineState, MTLBuffer */                                         \
  X(newFunctionWithName, "newFunctionWithName:")                                               \
  X(maxTotalThreadsPerThreadgroup, "maxTotalThreadsPerThreadgroup")                            \
  X(contents, "contents")                                                                      \
  /* MTLCommandQueue, MTLCommandBuffer */                                                      \
  X(commandBuffer, "commandBuffer")                                                            \
  X(blitCommandEncoder, "blitCommandEncoder")                                                  \
  X(computeCommandEncoder, "computeCommandEncoder")                                            \
  X(commit, "commit")                                                                          \
  X(waitUntilCompleted, "waitUntilCompleted")                                                  \
  X(status, "status")                                                                          \
  X(error, "error")                                                                            \
  /* MTLBlitCommandEncoder, MTLComputeCommandEncoder, MTLCommandEncoder */                     \
  X(copyFromBuffer, "copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:")            \
  X(setComputePipelineState, "setComputePipelineState:")                                       \
  X(setBufferOffsetAtIndex, "setBuffer:offset:atIndex:")                                       \
  X(setBytesLengthAtIndex, "setBytes:length:atIndex:")                                         \
  X(dispatchThreads, "dispatchThreads:threadsPerThreadgroup:")                                 \
  X(endEncoding, "endEncoding")                                                                \
  /* MPSGraphTensorData */                                                                     \
  X(initWithMTLBufferShapeDataType, "initWithMTLBuffer:shape:dataType:")                       \
  /* MPSGraph */                                                                               \
  X(placeholder, "placeholderWithShape:dataType:name:")                                        \
  X(constantWithScalar, "constantWithScalar:dataType:")                                        \
  X(constantWithData, "constantWithData:shape:dataType:")                                      \
  X(matmul, "matrixMultiplicationWithPrimaryTensor:secondaryTensor:name:")                     \
  X(conv2d, "convolution2DWithSourceTensor:weightsTensor:descriptor:name:")                    \
  X(add, "additionWithPrimaryTensor:secondaryTensor:name:")                                    \
  X(sub, "subtractionWithPrimaryTensor:secondaryTensor:name:")                                 \
  X(mul, "multiplicationWithPrimaryTensor:secondaryTensor:name:")                              \
  X(relu, "reLUWithTensor:name:")                                                              \
  X(erf, "erfWithTensor:name:")                                                                \
  X(tanh, "tanhWithTensor:name:")                                                              \
  X(exp, "exponentWithTensor:name:")                                                           \
  X(log, "logarithmWithTensor:name:")                                                          \
  X(softmax, "softMaxWithTensor:axis:name:")                                                   \
  X(reduceMax, "reductionMaximumWithTensor:axis:name:")                                        \
  X(reduceSum, "reductionSumWithTensor:axis:name:")                                            \
  X(reshape, "reshapeTensor:withShape:name:")                                                  \
  X(transpose, "transposeTensor:dimension:withDimension:name:")                                \
  X(select, "selectWithPredicateTensor:truePredicateTensor:falsePredicateTensor:name:")        \
  X(sdpa, "scaledDotProductAttentionWithQueryTensor:keyTensor:valueTensor:scale:name:")        \
  X(sdpaMasked,                                                                                \
    "scaledDotProductAttentionWithQueryTensor:keyTensor:valueTensor:maskTensor:scale:name:")   \
  X(run, "runWithMTLCommandQueue:feeds:targetOperations:resultsDictionary:")                   \
  /* MPSGraphConvolution2DOpDescriptor */                                                      \
  X(convDescriptor, "descriptorWithStrideInX:strideInY:dilationRateInX:dilationRateInY:"      \
                    "groups:paddingLeft:paddingRight:paddingTop:paddingBottom:paddingStyle:"   \
                    "dataLayout:weightsLayout:")

#endif
