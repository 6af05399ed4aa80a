// runner.cpp -- runs Metal kernels (compiled as C++ against include/metal_stdlib) on the CPU,
// thread by thread. Test support for tests/metal/test_msl_emulation.py; see emulate.py.
//
//   runner JOBS OUT
//
// JOBS (little-endian): "NVEMU1\0\0"; u32 nbuffers, each u64 length + bytes; u32 njobs, each:
// u32 name length + name, u32 groups[3], u32 size[3] (threads per threadgroup), u32 threaded,
// u32 nargs, each: u32 slot, u32 kind (0: u32 buffer id + u64 byte offset; 1: u64 length +
// bytes). OUT: u32 nbuffers, each u64 length + bytes (the buffers after every job ran).
//
// Every buffer and constant is its own malloc of exactly its length, so AddressSanitizer
// reports any read or write past one. Kernels without barriers run their threads one after
// another (group by group, thread ids in order); kernels with threadgroup_barrier run each
// threadgroup on size.x * size.y * size.z POSIX threads that meet at a pthread barrier.
#include <pthread.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

struct nv_emu_uint3 { unsigned x, y, z; };
typedef void (*nv_emu_body)(void *const *slots, nv_emu_uint3 tg, nv_emu_uint3 lt, nv_emu_uint3 size);
struct nv_emu_entry { const char *name; nv_emu_body body; };
extern "C" const nv_emu_entry nv_emu_entries[];
extern "C" const unsigned nv_emu_entry_count;

static thread_local pthread_barrier_t *tl_barrier = nullptr;

extern "C" void nv_emu_threadgroup_barrier(void)
{
    if (!tl_barrier) {
        std::fprintf(stderr, "threadgroup_barrier called by a kernel run without threads\n");
        std::abort();
    }
    pthread_barrier_wait(tl_barrier);
}

static FILE *in_file;

static void fail(const char *what)
{
    std::fprintf(stderr, "runner: %s\n", what);
    std::exit(2);
}

template <typename T> static T take()
{
    T v;
    if (std::fread(&v, sizeof v, 1, in_file) != 1)
        fail("truncated job file");
    return v;
}

static void *take_bytes(uint64_t n)
{
    void *p = std::malloc(n ? n : 1);
    if (!p)
        fail("out of memory");
    if (n && std::fread(p, 1, n, in_file) != n)
        fail("truncated job file");
    return p;
}

struct Group {
    nv_emu_body body;
    void *const *slots;
    nv_emu_uint3 groups, size, lt;
    pthread_barrier_t *barrier;
};

static void *group_thread(void *arg)
{
    Group *g = static_cast<Group *>(arg);
    tl_barrier = g->barrier;
    for (unsigned z = 0; z < g->groups.z; z++)
        for (unsigned y = 0; y < g->groups.y; y++)
            for (unsigned x = 0; x < g->groups.x; x++) {
                g->body(g->slots, {x, y, z}, g->lt, g->size);
                pthread_barrier_wait(g->barrier);   // the group's static memory is reused next
            }
    return nullptr;
}

static void run_threaded(nv_emu_body body, void *const *slots, nv_emu_uint3 groups, nv_emu_uint3 size)
{
    unsigned n = size.x * size.y * size.z;
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, nullptr, n);
    std::vector<Group> ctx(n);
    std::vector<pthread_t> threads(n);
    unsigned k = 0;
    for (unsigned z = 0; z < size.z; z++)
        for (unsigned y = 0; y < size.y; y++)
            for (unsigned x = 0; x < size.x; x++, k++) {
                ctx[k] = Group{body, slots, groups, size, {x, y, z}, &barrier};
                if (pthread_create(&threads[k], nullptr, group_thread, &ctx[k]) != 0)
                    fail("pthread_create failed");
            }
    for (unsigned i = 0; i < n; i++)
        pthread_join(threads[i], nullptr);
    pthread_barrier_destroy(&barrier);
}

static void run_sequential(nv_emu_body body, void *const *slots, nv_emu_uint3 groups, nv_emu_uint3 size)
{
    for (unsigned gz = 0; gz < groups.z; gz++)
        for (unsigned gy = 0; gy < groups.y; gy++)
            for (unsigned gx = 0; gx < groups.x; gx++)
                for (unsigned z = 0; z < size.z; z++)
                    for (unsigned y = 0; y < size.y; y++)
                        for (unsigned x = 0; x < size.x; x++)
                            body(slots, {gx, gy, gz}, {x, y, z}, size);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        fail("usage: runner JOBS OUT");
    in_file = std::fopen(argv[1], "rb");
    if (!in_file)
        fail("cannot open the job file");
    char magic[8];
    if (std::fread(magic, 1, 8, in_file) != 8 || std::memcmp(magic, "NVEMU1\0\0", 8) != 0)
        fail("not a job file");
    unsigned nbuf = take<uint32_t>();
    std::vector<char *> buffers(nbuf);
    std::vector<uint64_t> lengths(nbuf);
    for (unsigned b = 0; b < nbuf; b++) {
        lengths[b] = take<uint64_t>();
        buffers[b] = static_cast<char *>(take_bytes(lengths[b]));
    }
    unsigned njobs = take<uint32_t>();
    for (unsigned j = 0; j < njobs; j++) {
        uint32_t len = take<uint32_t>();
        std::string name(len, '\0');
        if (len && std::fread(&name[0], 1, len, in_file) != len)
            fail("truncated job file");
        nv_emu_uint3 groups{take<uint32_t>(), take<uint32_t>(), take<uint32_t>()};
        nv_emu_uint3 size{take<uint32_t>(), take<uint32_t>(), take<uint32_t>()};
        unsigned threaded = take<uint32_t>();
        unsigned nargs = take<uint32_t>();
        void *slots[64] = {nullptr};
        std::vector<void *> owned;
        for (unsigned a = 0; a < nargs; a++) {
            unsigned slot = take<uint32_t>(), kind = take<uint32_t>();
            if (slot >= 64)
                fail("slot out of range");
            if (kind == 0) {
                unsigned id = take<uint32_t>();
                uint64_t off = take<uint64_t>();
                if (id >= nbuf || off >= lengths[id])
                    fail("buffer argument out of range");
                slots[slot] = buffers[id] + off;
            } else {
                uint64_t n = take<uint64_t>();
                slots[slot] = take_bytes(n);
                owned.push_back(slots[slot]);
            }
        }
        nv_emu_body body = nullptr;
        for (unsigned e = 0; e < nv_emu_entry_count; e++)
            if (name == nv_emu_entries[e].name)
                body = nv_emu_entries[e].body;
        if (!body) {
            std::fprintf(stderr, "runner: no kernel named %s\n", name.c_str());
            return 3;
        }
        std::fprintf(stderr, "runner: job %u: %s\n", j, name.c_str());
        if (threaded)
            run_threaded(body, slots, groups, size);
        else
            run_sequential(body, slots, groups, size);
        for (void *p : owned)
            std::free(p);
    }
    std::fclose(in_file);
    FILE *out = std::fopen(argv[2], "wb");
    if (!out)
        fail("cannot write the output file");
    std::fwrite(&nbuf, 4, 1, out);
    for (unsigned b = 0; b < nbuf; b++) {
        std::fwrite(&lengths[b], 8, 1, out);
        std::fwrite(buffers[b], 1, lengths[b], out);
        std::free(buffers[b]);
    }
    std::fclose(out);
    return 0;
}
