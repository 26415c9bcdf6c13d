/*
 * gw_act_msg.h -- (gateway-internal) the SQS message actions
 * (gw_act_msg.c), named in gw_actions.def. Each handler always takes
 * ownership of ctx (see gw_act.h).
 */
#ifndef SLUICE_GW_ACT_MSG_H
#define SLUICE_GW_ACT_MSG_H

#include "gw_act.h"

gw_act_fn gw__act_send_message;
gw_act_fn gw__act_send_message_batch;
gw_act_fn gw__act_receive_message;
gw_act_fn gw__act_delete_message;
gw_act_fn gw__act_delete_message_batch;
gw_act_fn gw__act_change_message_visibility;
gw_act_fn gw__act_change_message_visibility_batch;

#endif
