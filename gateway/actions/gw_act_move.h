/*
 * gw_act_move.h -- (gateway-internal) the message move tasks
 * (gw_act_move.c): the SQS actions that start, list and cancel them,
 * named in gw_actions.def, and the lifetime hooks of the task scheduler.
 * Each handler always takes ownership of ctx (see gw_act.h).
 */
#ifndef SLUICE_GW_ACT_MOVE_H
#define SLUICE_GW_ACT_MOVE_H

#include "gw_act.h"

gw_act_fn gw__act_start_message_move_task;
gw_act_fn gw__act_list_message_move_tasks;
gw_act_fn gw__act_cancel_message_move_task;

#endif
