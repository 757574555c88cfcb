/* launch.cpp — the emulator's launcher: gk_emul_launch(name, ...) finds a kernel in the table the
 * test generates (registry.cpp includes this file after the kernels) and runs its grid. */
#include <cstring>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

thread_local gk_dim3 threadIdx, blockIdx;
gk_dim3 blockDim;
std::barrier<> *gk_emul_barrier;

template <typename... A, std::size_t... I>
static void gk_apply(void (*f)(A...), void **p, std::index_sequence<I...>) {
    f(*static_cast<std::remove_cv_t<A> *>(p[I])...);
}
template <typename... A>
static void gk_apply(void (*f)(A...), void **p) {
    gk_apply(f, p, std::index_sequence_for<A...>{});
}

struct gk_entry {
    const char *name;
    void (*run)(void **);
};
#define GK_ENTRY(n) {#n, [](void **p) { gk_apply(n, p); }}
extern const gk_entry gk_table[];
extern const int gk_table_len;

extern "C" int gk_emul_launch(const char *name, unsigned gx, unsigned gy, unsigned bx, const char *argbuf,
                              const int *offs, int nargs) {
    const gk_entry *e = nullptr;
    for (int i = 0; i < gk_table_len; i++)
        if (std::strcmp(gk_table[i].name, name) == 0) e = &gk_table[i];
    if (!e) return 500; /* CUDA_ERROR_NOT_FOUND */
    void *params[32];
    for (int i = 0; i < nargs; i++) params[i] = (void *)(argbuf + offs[i]);
    void **pp = params;
    blockDim = {bx, 1, 1};
    /* One OS thread per thread of a block, made once per launch: each runs its thread of every
     * block in turn, and a barrier ends each block (its __shared__ arrays are then free). */
    std::barrier<> bar(bx);
    gk_emul_barrier = &bar;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < bx; t++)
        threads.emplace_back([=, &bar] {
            threadIdx = {t, 0, 0};
            for (unsigned y = 0; y < gy; y++)
                for (unsigned x = 0; x < gx; x++) {
                    blockIdx = {x, y, 0};
                    e->run(pp);
                    bar.arrive_and_wait();
                }
        });
    for (auto &th : threads) th.join();
    return 0;
}
