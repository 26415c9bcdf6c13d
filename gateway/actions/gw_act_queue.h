/*
 * gw_act_queue.h -- (gateway-internal) the SQS queue actions
 * (gw_act_queue.c), named in gw_actions.def, and the lifetime hooks of
 * the state they keep (SQS's 60-second rules). Each handler always takes
 * ownership of ctx (see gw_act.h).
 */
#ifndef SLUICE_GW_ACT_QUEUE_H
#define SLUICE_GW_ACT_QUEUE_H

#include "gw_act.h"

gw_act_fn gw__act_create_queue;
gw_act_fn gw__act_get_queue_url;
gw_act_fn gw__act_list_queues;
gw_act_fn gw__act_delete_queue;
gw_act_fn gw__act_get_queue_attributes;
gw_act_fn gw__act_set_queue_attributes;
gw_act_fn gw__act_purge_queue;
gw_act_fn gw__act_list_dead_letter_source_queues;
gw_act_fn gw__act_tag_queue;
gw_act_fn gw__act_untag_queue;
gw_act_fn gw__act_list_queue_tags;

/* Sets up and frees the table of the 60-second rules. */
extern const struct gw_act_hooks gw__act_queue_hooks;

#endif
