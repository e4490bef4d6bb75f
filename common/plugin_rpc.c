/*
 * common/plugin_rpc.c - where the RPC server's life cycle hooks into the generic layer.
 *
 * The RPC services issue fills these in (rpc/server/).  Until then they keep the bookkeeping the
 * server will need - which devices load RPC clients, how many kernels run on each - and change
 * nothing else.  Contract for the filled-in version (docs/plugin-interface.md, "RPC"):
 *  - plugin_rpc_attach(dev, loaded): called once per image that defines PLUGIN_RPC_CLIENT_SYMBOL,
 *    after the image loaded and before any of its kernels runs.  Starts the device's server
 *    thread on first use (the thread calls ops->thread_attach first), allocates the mailboxes
 *    (ops->shared_alloc, or ops->alloc PLUGIN_ALLOC_HOST), writes the client into the device
 *    global (ops->global_lookup + ops->memcpy_h2d).  Errors fail the image load.
 *  - plugin_rpc_launch_begin/end(dev): around every kernel; end arrives when the kernel is known
 *    complete (synchronous launch returned, or its queue synchronised/queried done).  The server
 *    may poll only while kernels_running > 0.
 *  - plugin_rpc_detach(dev): at shutdown, before the device's images are released: stop and join
 *    the server thread, free the mailboxes.
 */
#include "plugin_state.h"

tether_status_t plugin_rpc_attach(struct plugin_device *dev, struct plugin_loaded *loaded,
                                  struct tether_error *err)
{
    (void)err;
    plugin_log(dev->plugin, dev, PLUGIN_LOG_DEBUG,
               "image %p defines %s; RPC services are not built into this plugin yet",
               loaded->tgt_image ? loaded->tgt_image->ImageStart : NULL, PLUGIN_RPC_CLIENT_SYMBOL);
    return TETHER_OK;
}

void plugin_rpc_detach(struct plugin_device *dev)
{
    dev->state->rpc = NULL;
}

void plugin_rpc_launch_begin(struct plugin_device *dev)
{
    atomic_fetch_add_explicit(&dev->state->kernels_running, 1, memory_order_relaxed);
}

void plugin_rpc_launch_end(struct plugin_device *dev, uint32_t count)
{
    atomic_fetch_sub_explicit(&dev->state->kernels_running, count, memory_order_relaxed);
}
