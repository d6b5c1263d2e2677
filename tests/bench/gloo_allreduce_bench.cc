// SPDX-License-Identifier: MIT
// Anchor benchmark: Gloo's allreduce algorithms on floats, per-node time
// after a barrier (the metric of mpi_coll_bench.c and minimp-bench's
// collective modes).
// usage: gloo_allreduce_bench RANK SIZE STOREDIR IFACE ALG BYTES ITERS
//   ALG: ring | ring_chunked | halving_doubling | bcube
// prints: ALG BYTES avg_per_node_us max_per_node_us   (rank 0)
#include <gloo/allreduce.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

using clk = std::chrono::steady_clock;

int main(int argc, char **argv) {
  if (argc < 8) {
    fprintf(stderr, "usage: %s RANK SIZE STOREDIR IFACE ALG BYTES ITERS\n",
            argv[0]);
    return 2;
  }
  int rank = atoi(argv[1]), size = atoi(argv[2]);
  std::string alg = argv[5];
  long bytes = atol(argv[6]);
  int iters = atoi(argv[7]), count = (int)(bytes / sizeof(float));
  gloo::transport::tcp::attr attr;
  attr.iface = argv[4];
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore fs(argv[3]);
  gloo::rendezvous::PrefixStore ps("allreduce", fs);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
  ctx->setTimeout(std::chrono::seconds(300));
  ctx->connectFullMesh(ps, dev);
  std::vector<float> buf(count > 0 ? count : 1, 1.0f);
  std::vector<float *> ptrs{buf.data()};
  std::unique_ptr<gloo::Algorithm> a;
  if (alg == "ring")
    a.reset(new gloo::AllreduceRing<float>(ctx, ptrs, count));
  else if (alg == "ring_chunked")
    a.reset(new gloo::AllreduceRingChunked<float>(ctx, ptrs, count));
  else if (alg == "halving_doubling")
    a.reset(new gloo::AllreduceHalvingDoubling<float>(ctx, ptrs, count));
  else if (alg == "bcube")
    a.reset(new gloo::AllreduceBcube<float>(ctx, ptrs, count));
  else {
    fprintf(stderr, "unknown algorithm %s\n", alg.c_str());
    return 2;
  }
  for (int w = 0; w < 2; w++)
    a->run();
  double sum = 0;
  for (int i = 0; i < iters; i++) {
    gloo::BarrierOptions b(ctx);
    gloo::barrier(b);
    auto t0 = clk::now();
    a->run();
    sum += std::chrono::duration<double>(clk::now() - t0).count();
  }
  std::vector<double> avg(1, sum / iters), mx(1, sum / iters);
  gloo::AllreduceOptions ao(ctx);
  ao.setOutput(avg.data(), 1);
  ao.setReduceFunction(static_cast<void (*)(void *, const void *,
                                            const void *, size_t)>(
      &gloo::sum<double>));
  gloo::allreduce(ao);
  gloo::AllreduceOptions am(ctx);
  am.setOutput(mx.data(), 1);
  am.setReduceFunction(static_cast<void (*)(void *, const void *,
                                            const void *, size_t)>(
      &gloo::max<double>));
  gloo::allreduce(am);
  if (rank == 0)
    printf("%s %ld %.1f %.1f\n", alg.c_str(), bytes, avg[0] / size * 1e6,
           mx[0] * 1e6);
  return 0;
}
